//! Kubeconfigs that providers read: parsed, checked against a [`KubeconfigPolicy`], and turned
//! into a client configuration.

use std::hash::{DefaultHasher, Hash, Hasher};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// What a kubeconfig that a provider reads may ask of this process.
///
/// A kubeconfig can make a client run a program (`exec`, an auth provider) or read local files
/// (a token file, a client certificate or key, a CA bundle) and send what it finds to the
/// kubeconfig's server. That is right for a file the operator's owner wrote. It is wrong for a
/// Secret that anyone who may write Secrets in the management cluster can change: that writer
/// must not be able to make the operator run a program, send its own service-account token to
/// a server of the writer's choosing, or turn off TLS verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KubeconfigPolicy {
    /// Credentials and certificates inline only. A kubeconfig is refused if any user names an
    /// `exec` plugin, an auth provider, a token file, or a client certificate or key file, or if
    /// any cluster names a CA file or sets `insecure-skip-tls-verify`. This is the default for
    /// [`SecretProvider`](super::SecretProvider).
    #[default]
    InlineOnly,
    /// Everything kube's own kubeconfig loading does, file paths and `exec` plugins included.
    /// This is for files that only the operator's owner can write, and it is the default for
    /// [`DirectoryProvider`](super::DirectoryProvider).
    Trusted,
}

/// Why a kubeconfig was not used.
#[derive(Debug)]
pub(super) enum LoadError {
    /// It does not parse. The parser's message can quote the content, so it is logged at debug
    /// only.
    Parse(String),
    /// The policy refuses it. The message names users and clusters, never credentials.
    Refused(String),
    /// Its current context does not make a configuration.
    Context(String),
}

impl LoadError {
    /// A message that quotes none of the kubeconfig's content: safe to log above debug.
    pub(super) fn reason(&self) -> String {
        match self {
            LoadError::Parse(_) => "it does not parse as a kubeconfig".to_owned(),
            LoadError::Refused(why) => why.clone(),
            LoadError::Context(e) => format!("its current context: {e}"),
        }
    }

    /// The whole message, the parser's included: for debug logs.
    pub(super) fn detail(&self) -> &str {
        match self {
            LoadError::Parse(e) | LoadError::Refused(e) | LoadError::Context(e) => e,
        }
    }
}

/// The hash of a kubeconfig's bytes: a provider's revision for it. Revisions are compared
/// within one process only.
pub(super) fn revision_of(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// The client configuration of `text`'s current context, if `policy` allows it.
pub(super) async fn load(text: &str, policy: KubeconfigPolicy) -> Result<kube::Config, LoadError> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| LoadError::Parse(e.to_string()))?;
    check(&kubeconfig, policy).map_err(LoadError::Refused)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| LoadError::Context(e.to_string()))
}

/// Refuses what `policy` does not allow, naming the user or cluster and what it asked for.
fn check(kubeconfig: &Kubeconfig, policy: KubeconfigPolicy) -> Result<(), String> {
    if policy == KubeconfigPolicy::Trusted {
        return Ok(());
    }
    let refused = |kind: &str, name: &str, what: &str| {
        format!("{kind} {name:?} asks for {what}, which KubeconfigPolicy::InlineOnly refuses")
    };
    for named in &kubeconfig.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let asks = [
            (user.exec.is_some(), "an exec plugin"),
            (user.auth_provider.is_some(), "an auth provider"),
            (user.token_file.is_some(), "a token file"),
            (
                user.client_certificate.is_some(),
                "a client certificate file",
            ),
            (user.client_key.is_some(), "a client key file"),
        ];
        if let Some((_, what)) = asks.iter().find(|(asked, _)| *asked) {
            return Err(refused("user", &named.name, what));
        }
    }
    for named in &kubeconfig.clusters {
        let Some(cluster) = &named.cluster else {
            continue;
        };
        let asks = [
            (cluster.certificate_authority.is_some(), "a CA file"),
            (
                cluster.insecure_skip_tls_verify == Some(true),
                "no TLS verification",
            ),
        ];
        if let Some((_, what)) = asks.iter().find(|(asked, _)| *asked) {
            return Err(refused("cluster", &named.name, what));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(user: &str, cluster: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n{cluster}users:\n- name: u\n  user:\n{user}contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        )
    }

    async fn outcome(text: &str, policy: KubeconfigPolicy) -> Result<(), String> {
        load(text, policy).await.map(|_| ()).map_err(|e| e.reason())
    }

    #[tokio::test]
    async fn inline_only_refuses_programs_files_and_skipped_verification() {
        let inline = kubeconfig("    token: abc\n", "");
        assert_eq!(outcome(&inline, KubeconfigPolicy::InlineOnly).await, Ok(()));
        let cases = [
            (
                kubeconfig(
                    "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true\n",
                    "",
                ),
                "user \"u\" asks for an exec plugin",
            ),
            (
                kubeconfig("    tokenFile: /var/run/secrets/token\n", ""),
                "user \"u\" asks for a token file",
            ),
            (
                kubeconfig("    client-key: /etc/key.pem\n", ""),
                "user \"u\" asks for a client key file",
            ),
            (
                kubeconfig(
                    "    token: abc\n",
                    "    certificate-authority: /etc/ca.pem\n",
                ),
                "cluster \"c\" asks for a CA file",
            ),
            (
                kubeconfig("    token: abc\n", "    insecure-skip-tls-verify: true\n"),
                "cluster \"c\" asks for no TLS verification",
            ),
        ];
        for (text, expected) in cases {
            let err = outcome(&text, KubeconfigPolicy::InlineOnly)
                .await
                .expect_err(expected);
            assert!(err.starts_with(expected), "{err:?} for {expected:?}");
        }
        // The trusted policy leaves the plugin to kube, which runs it when a request needs a
        // token, not now.
        let exec = kubeconfig(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true\n",
            "",
        );
        assert_eq!(outcome(&exec, KubeconfigPolicy::Trusted).await, Ok(()));
    }

    #[tokio::test]
    async fn a_parse_error_quotes_nothing_above_debug() {
        let text = kubeconfig(
            "    token: abc\n",
            "    insecure-skip-tls-verify: hunter2\n",
        );
        let err = load(&text, KubeconfigPolicy::InlineOnly)
            .await
            .expect_err("the setting is a boolean");
        // The parser's own message quotes the value; the reason logged above debug does not.
        assert!(err.detail().contains("hunter2"), "{}", err.detail());
        assert_eq!(err.reason(), "it does not parse as a kubeconfig");
    }

    #[test]
    fn revisions_follow_the_bytes() {
        assert_eq!(revision_of(b"a"), revision_of(b"a"));
        assert_ne!(revision_of(b"a"), revision_of(b"b"));
    }
}
