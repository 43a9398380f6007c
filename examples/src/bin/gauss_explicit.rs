//! The EP-Cache Gauss study through the explicit access API: L1 histograms over A, original vs optimised loop order.

use epcache_examples::gauss::{self, FIGURE_3_EVENTS, LoopOrder};

fn main() -> std::process::ExitCode {
    epcache_examples::run_tool("gauss_explicit", tool)
}

fn tool() -> anyhow::Result<()> {
    let portions = 25;
    let original = gauss::run(LoopOrder::Original, 100, portions)?;
    let optimised = gauss::run(LoopOrder::Optimised, 100, portions)?;
    println!("Gauss elimination, REAL A(100,100), L1 8 KB 2-way 32 B lines (LRU, write-back)");
    println!("Events over A in {portions} equal portions; original | optimised");
    print!("{:>7}", "portion");
    for e in FIGURE_3_EVENTS {
        print!(" {e:>12}");
    }
    print!("  |");
    for e in FIGURE_3_EVENTS {
        print!(" {e:>12}");
    }
    println!();
    for p in 0..portions as usize {
        print!("{p:>7}");
        for h in &original.histograms {
            print!(" {:>12}", h.buckets[p]);
        }
        print!("  |");
        for h in &optimised.histograms {
            print!(" {:>12}", h.buckets[p]);
        }
        println!();
    }
    print!("{:>7}", "total");
    for c in &original.static_counts {
        print!(" {c:>12}");
    }
    print!("  |");
    for c in &optimised.static_counts {
        print!(" {c:>12}");
    }
    println!();
    let spills: u64 = original
        .histograms
        .iter()
        .chain(&optimised.histograms)
        .map(|h| h.spills.total())
        .sum();
    println!(
        "counter spills to software: {spills}; solution error: {:.1e} / {:.1e}",
        original.max_error, optimised.max_error
    );
    Ok(())
}
