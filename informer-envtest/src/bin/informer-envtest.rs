//! `informer-envtest build`: build (or find) kube-apiserver and etcd and print where they are.
//! `informer-envtest start [--kubeconfig PATH]`: start kube-apiserver and etcd on loopback,
//! write a kubeconfig for `kubectl`, and run until Ctrl-C.

use std::path::PathBuf;

use informer_envtest::{Binaries, Envtest, Options};

fn usage() -> ! {
    eprintln!("usage: informer-envtest build | start [--kubeconfig PATH]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => Binaries::find(&Options::default()).map(|binaries| match binaries {
            Binaries::Launcher(path) => {
                eprintln!("informer-envtest: launcher ready at {}", path.display());
            }
            Binaries::External {
                kube_apiserver,
                etcd,
            } => eprintln!(
                "informer-envtest: using {} and {} (nothing to build)",
                kube_apiserver.display(),
                etcd.display()
            ),
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
        "informer-envtest: kube-apiserver at {}; kubectl --kubeconfig {}; Ctrl-C stops it",
        env.server_url(),
        kubeconfig.display()
    );
    let _ = tokio::signal::ctrl_c().await;
    drop(env);
    let _ = std::fs::remove_file(&kubeconfig);
    Ok(())
}
