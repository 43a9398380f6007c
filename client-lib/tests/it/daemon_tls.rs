//! TLS end to end (with the `tls` feature of both crates): a daemon with a certificate for
//! 127.0.0.1 signed by a CA made with openssl, a client trusting the CA, a bearer token over it, and a client that does
//! not trust it being refused. `cargo test -p epcache-client --features tls,embedded --test it daemon_tls`.

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_daemon_serves_a_client_that_trusts_its_certificate() {
    use std::process::Command;

    use epcache_client::{Client, ConnectOptions};

    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (ca, cert, key) = (path("ca.pem"), path("cert.pem"), path("key.pem"));
    let (ca_key, req, ext) = (path("ca-key.pem"), path("req.pem"), path("ext.cnf"));
    std::fs::write(&ext, "subjectAltName=IP:127.0.0.1\n").unwrap();
    // A CA, and a server certificate for 127.0.0.1 signed by it (webpki refuses a CA certificate
    // used as the server's own).
    let steps: [Vec<&str>; 3] = [
        vec![
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=epcache test CA",
            "-keyout",
            &ca_key,
            "-out",
            &ca,
        ],
        vec![
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=epcached",
            "-keyout",
            &key,
            "-out",
            &req,
        ],
        vec![
            "x509",
            "-req",
            "-days",
            "1",
            "-CAcreateserial",
            "-in",
            &req,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-extfile",
            &ext,
            "-out",
            &cert,
        ],
    ];
    for args in steps {
        let made = Command::new("openssl").args(&args).output();
        match made {
            Ok(out) if out.status.success() => {}
            other => {
                epcache_test_support::tools::skipped(&format!(
                    "openssl could not make certificates: {other:?}"
                ));
                return;
            }
        }
    }
    let daemon = epcache_daemon::serve(epcache_daemon::Config {
        token: Some("tls-token-secret".into()),
        tls: Some(epcache_daemon::TlsFiles {
            cert: cert.into(),
            key: key.into(),
        }),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..epcache_daemon::Config::private(dir.path().join("rt"))
    })
    .await
    .unwrap();
    let address = daemon.endpoint().replace("http://", "https://");
    let mut client = Client::connect_with(ConnectOptions {
        address: address.clone(),
        token: Some("tls-token-secret".into()),
        ca_certificate: Some(std::fs::read(&ca).unwrap()),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(client.targets().await.unwrap().is_empty());
    // Without trusting the certificate, the handshake fails.
    let untrusting = Client::connect_with(ConnectOptions {
        address,
        ..Default::default()
    })
    .await;
    match untrusting {
        Err(_) => {}
        Ok(mut c) => assert!(c.targets().await.is_err()),
    }
    daemon.shutdown().await;
}
