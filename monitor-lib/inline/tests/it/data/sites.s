# size 1 write false carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.1
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.1
.Lepcache.scan.1:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.1.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.1.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.1.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.1.3
.Lepcache.miss.1:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.1
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.1
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.1
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.1
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$1, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.1(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.1
.Lepcache.full.1:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.1
.Lepcache.slow.1:
	call	__tsan_read1
.Lepcache.back.1:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.1
.Lepcache.hit.1.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.1
.Lepcache.hit.1.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.1
.Lepcache.hit.1.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.1
.Lepcache.hit.1.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.1:
# size 2 write false carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.2
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.2
.Lepcache.scan.2:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.2.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.2.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.2.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.2.3
.Lepcache.miss.2:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.2
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.2
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.2
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.2
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.2
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$2, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.2(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.2
.Lepcache.full.2:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.2
.Lepcache.slow.2:
	call	__tsan_read2
.Lepcache.back.2:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.2
.Lepcache.hit.2.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.2
.Lepcache.hit.2.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.2
.Lepcache.hit.2.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.2
.Lepcache.hit.2.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.2:
# size 4 write false carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.3
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.3
.Lepcache.scan.3:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.3.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.3.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.3.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.3.3
.Lepcache.miss.3:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.3
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.3
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.3
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.3
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.3
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$4, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.3(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.3
.Lepcache.full.3:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.3
.Lepcache.slow.3:
	call	__tsan_read4
.Lepcache.back.3:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.3
.Lepcache.hit.3.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.3
.Lepcache.hit.3.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.3
.Lepcache.hit.3.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.3
.Lepcache.hit.3.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.3:
# size 8 write false carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.4
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.4
.Lepcache.scan.4:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.4.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.4.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.4.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.4.3
.Lepcache.miss.4:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.4
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.4
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.4
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.4
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.4
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$8, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.4(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.4
.Lepcache.full.4:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.4
.Lepcache.slow.4:
	call	__tsan_read8
.Lepcache.back.4:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.4
.Lepcache.hit.4.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.4
.Lepcache.hit.4.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.4
.Lepcache.hit.4.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.4
.Lepcache.hit.4.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.4:
# size 16 write false carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.5
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.5
.Lepcache.scan.5:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.5.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.5.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.5.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.5.3
.Lepcache.miss.5:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.5
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.5
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.5
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.5
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.5
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$16, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.5(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.5
.Lepcache.full.5:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.5
.Lepcache.slow.5:
	call	__tsan_read16
.Lepcache.back.5:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.5
.Lepcache.hit.5.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.5
.Lepcache.hit.5.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.5
.Lepcache.hit.5.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.5
.Lepcache.hit.5.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.5:
# size 1 write true carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.6
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.6
.Lepcache.scan.6:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.6.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.6.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.6.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.6.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.6.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.6.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.6.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.6.3
.Lepcache.miss.6:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.6
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.6
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.6
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.6
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$33, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.6(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.6
.Lepcache.full.6:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.6
.Lepcache.clean.6.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.6.0
.Lepcache.clean.6.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.6.1
.Lepcache.clean.6.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.6.2
.Lepcache.clean.6.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.6.3
.Lepcache.slow.6:
	call	__tsan_write1
.Lepcache.back.6:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.6
.Lepcache.hit.6.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.6
.Lepcache.hit.6.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.6
.Lepcache.hit.6.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.6
.Lepcache.hit.6.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.6:
# size 2 write true carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.7
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.7
.Lepcache.scan.7:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.7.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.7.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.7.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.7.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.7.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.7.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.7.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.7.3
.Lepcache.miss.7:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.7
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.7
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.7
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.7
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.7
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$34, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.7(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.7
.Lepcache.full.7:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.7
.Lepcache.clean.7.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.7.0
.Lepcache.clean.7.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.7.1
.Lepcache.clean.7.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.7.2
.Lepcache.clean.7.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.7.3
.Lepcache.slow.7:
	call	__tsan_write2
.Lepcache.back.7:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.7
.Lepcache.hit.7.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.7
.Lepcache.hit.7.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.7
.Lepcache.hit.7.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.7
.Lepcache.hit.7.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.7:
# size 4 write true carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.8
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.8
.Lepcache.scan.8:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.8.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.8.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.8.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.8.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.8.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.8.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.8.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.8.3
.Lepcache.miss.8:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.8
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.8
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.8
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.8
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.8
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$36, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.8(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.8
.Lepcache.full.8:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.8
.Lepcache.clean.8.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.8.0
.Lepcache.clean.8.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.8.1
.Lepcache.clean.8.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.8.2
.Lepcache.clean.8.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.8.3
.Lepcache.slow.8:
	call	__tsan_write4
.Lepcache.back.8:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.8
.Lepcache.hit.8.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.8
.Lepcache.hit.8.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.8
.Lepcache.hit.8.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.8
.Lepcache.hit.8.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.8:
# size 8 write true carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.9
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.9
.Lepcache.scan.9:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.9.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.9.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.9.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.9.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.9.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.9.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.9.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.9.3
.Lepcache.miss.9:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.9
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.9
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.9
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.9
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.9
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$40, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.9(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.9
.Lepcache.full.9:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.9
.Lepcache.clean.9.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.9.0
.Lepcache.clean.9.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.9.1
.Lepcache.clean.9.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.9.2
.Lepcache.clean.9.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.9.3
.Lepcache.slow.9:
	call	__tsan_write8
.Lepcache.back.9:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.9
.Lepcache.hit.9.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.9
.Lepcache.hit.9.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.9
.Lepcache.hit.9.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.9
.Lepcache.hit.9.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.9:
# size 16 write true carried Nothing
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.10
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.10
.Lepcache.scan.10:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.10.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.10.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.10.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.10.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.10.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.10.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.10.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.10.3
.Lepcache.miss.10:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.10
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.10
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.10
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.10
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.10
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$48, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.10(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.10
.Lepcache.full.10:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.10
.Lepcache.clean.10.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.10.0
.Lepcache.clean.10.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.10.1
.Lepcache.clean.10.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.10.2
.Lepcache.clean.10.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.10.3
.Lepcache.slow.10:
	call	__tsan_write16
.Lepcache.back.10:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.10
.Lepcache.hit.10.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.10
.Lepcache.hit.10.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.10
.Lepcache.hit.10.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.10
.Lepcache.hit.10.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.10:
# size 1 write false carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.11
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.11
.Lepcache.scan.11:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.11.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.11.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.11.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.11.3
.Lepcache.miss.11:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.11
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.11
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.11
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.11
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$1, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.11(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.11
.Lepcache.full.11:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.11
.Lepcache.slow.11:
	call	__tsan_read1
.Lepcache.back.11:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.11
.Lepcache.hit.11.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.11
.Lepcache.hit.11.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.11
.Lepcache.hit.11.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.11
.Lepcache.hit.11.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.11:
# size 2 write false carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.12
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.12
.Lepcache.scan.12:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.12.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.12.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.12.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.12.3
.Lepcache.miss.12:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.12
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.12
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.12
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.12
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.12
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$2, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.12(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.12
.Lepcache.full.12:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.12
.Lepcache.slow.12:
	call	__tsan_read2
.Lepcache.back.12:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.12
.Lepcache.hit.12.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.12
.Lepcache.hit.12.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.12
.Lepcache.hit.12.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.12
.Lepcache.hit.12.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.12:
# size 4 write false carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.13
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.13
.Lepcache.scan.13:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.13.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.13.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.13.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.13.3
.Lepcache.miss.13:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.13
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.13
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.13
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.13
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.13
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$4, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.13(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.13
.Lepcache.full.13:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.13
.Lepcache.slow.13:
	call	__tsan_read4
.Lepcache.back.13:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.13
.Lepcache.hit.13.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.13
.Lepcache.hit.13.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.13
.Lepcache.hit.13.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.13
.Lepcache.hit.13.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.13:
# size 8 write false carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.14
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.14
.Lepcache.scan.14:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.14.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.14.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.14.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.14.3
.Lepcache.miss.14:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.14
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.14
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.14
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.14
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.14
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$8, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.14(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.14
.Lepcache.full.14:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.14
.Lepcache.slow.14:
	call	__tsan_read8
.Lepcache.back.14:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.14
.Lepcache.hit.14.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.14
.Lepcache.hit.14.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.14
.Lepcache.hit.14.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.14
.Lepcache.hit.14.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.14:
# size 16 write false carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.15
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.15
.Lepcache.scan.15:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.15.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.15.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.15.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.15.3
.Lepcache.miss.15:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.15
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.15
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.15
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.15
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.15
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$16, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.15(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.15
.Lepcache.full.15:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.15
.Lepcache.slow.15:
	call	__tsan_read16
.Lepcache.back.15:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.15
.Lepcache.hit.15.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.15
.Lepcache.hit.15.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.15
.Lepcache.hit.15.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.15
.Lepcache.hit.15.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.15:
# size 1 write true carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.16
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.16
.Lepcache.scan.16:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.16.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.16.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.16.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.16.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.16.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.16.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.16.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.16.3
.Lepcache.miss.16:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.16
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.16
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.16
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.16
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$33, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.16(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.16
.Lepcache.full.16:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.16
.Lepcache.clean.16.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.16.0
.Lepcache.clean.16.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.16.1
.Lepcache.clean.16.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.16.2
.Lepcache.clean.16.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.16.3
.Lepcache.slow.16:
	call	__tsan_write1
.Lepcache.back.16:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.16
.Lepcache.hit.16.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.16
.Lepcache.hit.16.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.16
.Lepcache.hit.16.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.16
.Lepcache.hit.16.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.16:
# size 2 write true carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.17
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.17
.Lepcache.scan.17:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.17.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.17.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.17.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.17.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.17.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.17.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.17.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.17.3
.Lepcache.miss.17:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.17
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.17
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.17
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.17
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.17
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$34, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.17(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.17
.Lepcache.full.17:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.17
.Lepcache.clean.17.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.17.0
.Lepcache.clean.17.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.17.1
.Lepcache.clean.17.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.17.2
.Lepcache.clean.17.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.17.3
.Lepcache.slow.17:
	call	__tsan_write2
.Lepcache.back.17:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.17
.Lepcache.hit.17.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.17
.Lepcache.hit.17.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.17
.Lepcache.hit.17.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.17
.Lepcache.hit.17.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.17:
# size 4 write true carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.18
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.18
.Lepcache.scan.18:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.18.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.18.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.18.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.18.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.18.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.18.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.18.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.18.3
.Lepcache.miss.18:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.18
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.18
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.18
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.18
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.18
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$36, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.18(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.18
.Lepcache.full.18:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.18
.Lepcache.clean.18.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.18.0
.Lepcache.clean.18.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.18.1
.Lepcache.clean.18.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.18.2
.Lepcache.clean.18.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.18.3
.Lepcache.slow.18:
	call	__tsan_write4
.Lepcache.back.18:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.18
.Lepcache.hit.18.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.18
.Lepcache.hit.18.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.18
.Lepcache.hit.18.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.18
.Lepcache.hit.18.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.18:
# size 8 write true carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.19
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.19
.Lepcache.scan.19:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.19.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.19.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.19.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.19.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.19.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.19.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.19.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.19.3
.Lepcache.miss.19:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.19
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.19
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.19
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.19
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.19
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$40, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.19(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.19
.Lepcache.full.19:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.19
.Lepcache.clean.19.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.19.0
.Lepcache.clean.19.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.19.1
.Lepcache.clean.19.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.19.2
.Lepcache.clean.19.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.19.3
.Lepcache.slow.19:
	call	__tsan_write8
.Lepcache.back.19:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.19
.Lepcache.hit.19.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.19
.Lepcache.hit.19.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.19
.Lepcache.hit.19.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.19
.Lepcache.hit.19.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.19:
# size 16 write true carried Mask
	movq	epcache_inline_v9_tag_word(%rip), %r11
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.20
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.20
.Lepcache.scan.20:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.20.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.20.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.20.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.20.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.20.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.20.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.20.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.20.3
.Lepcache.miss.20:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.20
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.20
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.20
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.20
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.20
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$48, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.20(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.20
.Lepcache.full.20:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.20
.Lepcache.clean.20.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.20.0
.Lepcache.clean.20.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.20.1
.Lepcache.clean.20.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.20.2
.Lepcache.clean.20.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.20.3
.Lepcache.slow.20:
	call	__tsan_write16
.Lepcache.back.20:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.20
.Lepcache.hit.20.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.20
.Lepcache.hit.20.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.20
.Lepcache.hit.20.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.20
.Lepcache.hit.20.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.20:
# size 1 write false carried MaskAndWord
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.21
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.21
.Lepcache.scan.21:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.21.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.21.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.21.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.21.3
.Lepcache.miss.21:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.21
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.21
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.21
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.21
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$1, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.21(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.21
.Lepcache.full.21:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.21
.Lepcache.slow.21:
	call	__tsan_read1
.Lepcache.back.21:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.21
.Lepcache.hit.21.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.21
.Lepcache.hit.21.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.21
.Lepcache.hit.21.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.21
.Lepcache.hit.21.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.21:
# size 2 write false carried MaskAndWord
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.22
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.22
.Lepcache.scan.22:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.22.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.22.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.22.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.22.3
.Lepcache.miss.22:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.22
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.22
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.22
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.22
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.22
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$2, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.22(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.22
.Lepcache.full.22:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.22
.Lepcache.slow.22:
	call	__tsan_read2
.Lepcache.back.22:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.22
.Lepcache.hit.22.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.22
.Lepcache.hit.22.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.22
.Lepcache.hit.22.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.22
.Lepcache.hit.22.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.22:
# size 4 write false carried MaskAndWord
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.23
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.23
.Lepcache.scan.23:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.23.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.23.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.23.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.23.3
.Lepcache.miss.23:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.23
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.23
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.23
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.23
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.23
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$4, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.23(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.23
.Lepcache.full.23:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.23
.Lepcache.slow.23:
	call	__tsan_read4
.Lepcache.back.23:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.23
.Lepcache.hit.23.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.23
.Lepcache.hit.23.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.23
.Lepcache.hit.23.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.23
.Lepcache.hit.23.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.23:
# size 8 write false carried MaskAndWord
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.24
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.24
.Lepcache.scan.24:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.24.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.24.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.24.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.24.3
.Lepcache.miss.24:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.24
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.24
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.24
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.24
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.24
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$8, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.24(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.24
.Lepcache.full.24:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.24
.Lepcache.slow.24:
	call	__tsan_read8
.Lepcache.back.24:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.24
.Lepcache.hit.24.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.24
.Lepcache.hit.24.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.24
.Lepcache.hit.24.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.24
.Lepcache.hit.24.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.24:
# size 16 write false carried MaskAndWord
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.25
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.25
.Lepcache.scan.25:
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.25.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.25.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.25.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.25.3
.Lepcache.miss.25:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.25
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.25
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.25
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.25
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.25
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$16, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.25(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.25
.Lepcache.full.25:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.25
.Lepcache.slow.25:
	call	__tsan_read16
.Lepcache.back.25:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.25
.Lepcache.hit.25.0:
	incq	%fs:epcache_inline_v9_read_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.25
.Lepcache.hit.25.1:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.25
.Lepcache.hit.25.2:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.25
.Lepcache.hit.25.3:
	incq	%fs:epcache_inline_v9_read_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.25:
# size 1 write true carried MaskAndWord
	movq	%rdi, %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.26
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.26
.Lepcache.scan.26:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.26.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.26.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.26.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.26.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.26.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.26.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.26.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.26.3
.Lepcache.miss.26:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.26
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.26
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.26
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.26
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$33, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.26(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.26
.Lepcache.full.26:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.26
.Lepcache.clean.26.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.26.0
.Lepcache.clean.26.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.26.1
.Lepcache.clean.26.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.26.2
.Lepcache.clean.26.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.26.3
.Lepcache.slow.26:
	call	__tsan_write1
.Lepcache.back.26:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.26
.Lepcache.hit.26.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.26
.Lepcache.hit.26.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.26
.Lepcache.hit.26.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.26
.Lepcache.hit.26.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.26:
# size 2 write true carried MaskAndWord
	leaq	1(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.27
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.27
.Lepcache.scan.27:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.27.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.27.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.27.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.27.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.27.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.27.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.27.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.27.3
.Lepcache.miss.27:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.27
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.27
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.27
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.27
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.27
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$34, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.27(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.27
.Lepcache.full.27:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.27
.Lepcache.clean.27.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.27.0
.Lepcache.clean.27.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.27.1
.Lepcache.clean.27.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.27.2
.Lepcache.clean.27.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.27.3
.Lepcache.slow.27:
	call	__tsan_write2
.Lepcache.back.27:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.27
.Lepcache.hit.27.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.27
.Lepcache.hit.27.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.27
.Lepcache.hit.27.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.27
.Lepcache.hit.27.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.27:
# size 4 write true carried MaskAndWord
	leaq	3(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.28
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.28
.Lepcache.scan.28:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.28.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.28.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.28.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.28.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.28.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.28.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.28.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.28.3
.Lepcache.miss.28:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.28
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.28
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.28
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.28
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.28
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$36, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.28(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.28
.Lepcache.full.28:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.28
.Lepcache.clean.28.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.28.0
.Lepcache.clean.28.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.28.1
.Lepcache.clean.28.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.28.2
.Lepcache.clean.28.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.28.3
.Lepcache.slow.28:
	call	__tsan_write4
.Lepcache.back.28:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.28
.Lepcache.hit.28.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.28
.Lepcache.hit.28.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.28
.Lepcache.hit.28.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.28
.Lepcache.hit.28.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.28:
# size 8 write true carried MaskAndWord
	leaq	7(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.29
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.29
.Lepcache.scan.29:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.29.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.29.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.29.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.29.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.29.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.29.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.29.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.29.3
.Lepcache.miss.29:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.29
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.29
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.29
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.29
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.29
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$40, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.29(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.29
.Lepcache.full.29:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.29
.Lepcache.clean.29.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.29.0
.Lepcache.clean.29.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.29.1
.Lepcache.clean.29.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.29.2
.Lepcache.clean.29.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.29.3
.Lepcache.slow.29:
	call	__tsan_write8
.Lepcache.back.29:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.29
.Lepcache.hit.29.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.29
.Lepcache.hit.29.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.29
.Lepcache.hit.29.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.29
.Lepcache.hit.29.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.29:
# size 16 write true carried MaskAndWord
	leaq	15(%rdi), %rax
	orq	%r11, %rax
	movl	%edi, %edx
	andl	%r10d, %edx
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	andl	$3, %ecx
	addq	%rdx, %rcx
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	jne	.Lepcache.scan.30
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	jmp	.Lepcache.done.30
.Lepcache.scan.30:
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	je	.Lepcache.hit.30.0
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.hit.30.1
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.hit.30.2
	cmpq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.hit.30.3
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rdx,8)
	je	.Lepcache.clean.30.0
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+8(,%rdx,8)
	je	.Lepcache.clean.30.1
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+16(,%rdx,8)
	je	.Lepcache.clean.30.2
	cmpq	%rax, %fs:epcache_inline_v9_read_tags@tpoff+24(,%rdx,8)
	je	.Lepcache.clean.30.3
.Lepcache.miss.30:
	movq	epcache_inline_v9_tag_word(%rip), %rcx
	cmpq	%rcx, %fs:epcache_inline_v9_synced_word@tpoff
	jne	.Lepcache.slow.30
	orq	%rdi, %rcx
	cmpq	%rax, %rcx
	jne	.Lepcache.slow.30
	movq	%rdi, %rcx
	shrq	$12, %rcx
	imull	$0x9e3779b1, %ecx, %ecx
	shrl	$26, %ecx
	cmpq	%fs:epcache_inline_v9_whole_lo@tpoff(,%rcx,8), %rdi
	jb	.Lepcache.slow.30
	cmpq	%fs:epcache_inline_v9_whole_hi@tpoff(,%rcx,8), %rdi
	jae	.Lepcache.slow.30
	movl	%fs:epcache_inline_v9_whole_structure@tpoff(,%rcx,4), %ecx
	incb	%fs:epcache_inline_v9_in_miss@tpoff
	movq	%fs:epcache_inline_v9_batch_pos@tpoff, %rsi
	cmpq	%fs:epcache_inline_v9_batch_end@tpoff, %rsi
	jae	.Lepcache.full.30
	movq	%rcx, 32(%rsi)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %r8d
	movb	%r8b, 36(%rsi)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1024(%r8), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+1280(%r8), %ecx
	addq	%rdx, %rcx
	movq	%fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8), %r8
	orq	$48, %r8
	shlq	$56, %r8
	orq	%rdi, %r8
	movq	%r8, 0(%rsi)
	movq	$0, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rcx,8)
	movq	%fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8), %r8
	movq	%r8, 8(%rsi)
	movq	%fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 16(%rsi)
	movq	%fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8), %r8
	movq	%r8, 24(%rsi)
	movq	$0, %fs:epcache_inline_v9_read_hits@tpoff(,%rcx,8)
	movq	$0, %fs:epcache_inline_v9_write_hits@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_read_tags@tpoff(,%rcx,8)
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rcx,8)
	leaq	.Lepcache.back.30(%rip), %r8
	movq	%r8, 40(%rsi)
	addq	$48, %rsi
	movq	%rsi, %fs:epcache_inline_v9_batch_pos@tpoff
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.done.30
.Lepcache.full.30:
	decb	%fs:epcache_inline_v9_in_miss@tpoff
	jmp	.Lepcache.slow.30
.Lepcache.clean.30.0:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff(,%rdx,8)
	jmp	.Lepcache.hit.30.0
.Lepcache.clean.30.1:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+8(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+8(,%rdx,8)
	jmp	.Lepcache.hit.30.1
.Lepcache.clean.30.2:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+16(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+16(,%rdx,8)
	jmp	.Lepcache.hit.30.2
.Lepcache.clean.30.3:
	movq	%rax, %fs:epcache_inline_v9_write_tags@tpoff+24(,%rdx,8)
	movq	$64, %fs:epcache_inline_v9_dirty_pending@tpoff+24(,%rdx,8)
	jmp	.Lepcache.hit.30.3
.Lepcache.slow.30:
	call	__tsan_write16
.Lepcache.back.30:
	movq	epcache_inline_v9_tag_word(%rip), %r11
	movq	%r11, %r10
	shrq	$56, %r10
	shll	$5, %r10d
	jmp	.Lepcache.done.30
.Lepcache.hit.30.0:
	incq	%fs:epcache_inline_v9_write_hits@tpoff(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.30
.Lepcache.hit.30.1:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+8(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+256(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.30
.Lepcache.hit.30.2:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+16(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+512(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
	jmp	.Lepcache.done.30
.Lepcache.hit.30.3:
	incq	%fs:epcache_inline_v9_write_hits@tpoff+24(,%rdx,8)
	movzbl	%fs:epcache_inline_v9_order@tpoff(,%rdx,8), %ecx
	movzbl	%fs:epcache_inline_v9_order_tables@tpoff+768(%rcx), %ecx
	movb	%cl, %fs:epcache_inline_v9_order@tpoff(,%rdx,8)
.Lepcache.done.30:
