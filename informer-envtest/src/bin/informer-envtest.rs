//! `informer-envtest build`: build (or find) the kube-apiserver launcher and print its path.
//! `informer-envtest start [--kubeconfig PATH]`: start kube-apiserver and etcd on loopback,
//! write a kubeconfig for `kubectl`, and run until Ctrl-C or until standard input closes.

use std::path::PathBuf;

use informer_envtest::{Envtest, Options};

fn usage() -> ! {
    eprintln!("usage: informer-envtest build | start [--kubeconfig PATH]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => informer_envtest::build_launcher().map(|path| {
            eprintln!("informer-envtest: launcher ready at {}", path.display());
        }),
        Some("start") => {
            let kubeconfig = match args.get(1).map(String::as_str) {
                Some("--kubeconfig") => args.get(2).map(PathBuf::from).unwrap_or_else(|| usage()),
                Some(_) => usage(),
                None => PathBuf::from("envtest.kubeconfig"),
            };
            start(kubeconfig).await
        }
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("informer-envtest: {e}");
        std::process::exit(1);
    }
}

async fn start(kubeconfig: PathBuf) -> Result<(), informer_envtest::Error> {
    let env = Envtest::start(Options::default()).await?;
    env.write_kubeconfig(&kubeconfig)?;
    eprintln!(
        "informer-envtest: kube-apiserver {} at {}; kubectl --kubeconfig {}; Ctrl-C stops it",
        informer_envtest::KUBERNETES_VERSION,
        env.server_url(),
        kubeconfig.display()
    );
    let _ = tokio::signal::ctrl_c().await;
    drop(env);
    let _ = std::fs::remove_file(&kubeconfig);
    Ok(())
}
