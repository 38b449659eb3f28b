//! The column definitions of kubectl's built-in printers (name, type, priority, description), as
//! `kubernetes/pkg/printers/internalversion/printers.go` declares them.

/// (name, type, priority, description).
pub(super) type Def = (&'static str, &'static str, i64, &'static str);

const AGE: Def = (
    "Age",
    "string",
    0,
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
);
const CONTAINERS: Def = (
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
const IMAGES: Def = (
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: Def = ("Selector", "string", 1, "Label selector for pods.");

/// The columns of `group`/`kind` after Name, if it has a printer.
pub(in crate::printers) fn defs(group: &str, kind: &str) -> Option<&'static [Def]> {
    Some(match (group, kind) {
        ("", "ConfigMap") => CONFIG_MAP,
        ("", "Secret") => SECRET,
        ("", "Namespace") => NAMESPACE,
        ("", "Pod") => POD,
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "ReplicaSet") | ("", "ReplicationController") => REPLICA_SET,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "DaemonSet") => DAEMON_SET,
        ("batch", "Job") => JOB,
        ("batch", "CronJob") => CRON_JOB,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        ("", "PersistentVolumeClaim") => PERSISTENT_VOLUME_CLAIM,
        ("networking.k8s.io", "Ingress") => INGRESS,
        ("", "Node") => NODE,
        ("", "Service") => SERVICE,
        _ => return None,
    })
}

const CONFIG_MAP: &[Def] = &[
    (
        "Data",
        "integer",
        0,
        "Data contains the configuration data.",
    ),
    AGE,
];

const SECRET: &[Def] = &[
    ("Type", "string", 0, "The type of the secret"),
    ("Data", "integer", 0, "The number of keys in the secret"),
    AGE,
];

const NAMESPACE: &[Def] = &[("Status", "string", 0, "The status of the namespace"), AGE];

const POD: &[Def] = &[
    (
        "Ready",
        "string",
        0,
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    (
        "Status",
        "string",
        0,
        "The aggregate status of the containers in this pod.",
    ),
    (
        "Restarts",
        "string",
        0,
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    (
        "IP",
        "string",
        1,
        "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    (
        "Node",
        "string",
        1,
        "NodeName is a request to schedule this pod onto a specific node.",
    ),
    (
        "Nominated Node",
        "string",
        1,
        "nominatedNodeName is set when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    (
        "Readiness Gates",
        "string",
        1,
        "If specified, all readiness gates will be evaluated for pod readiness.",
    ),
];

const DEPLOYMENT: &[Def] = &[
    ("Ready", "string", 0, "Number of the pod with ready state"),
    (
        "Up-to-date",
        "integer",
        0,
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    (
        "Available",
        "integer",
        0,
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const REPLICA_SET: &[Def] = &[
    (
        "Desired",
        "integer",
        0,
        "Replicas is the number of desired replicas.",
    ),
    (
        "Current",
        "integer",
        0,
        "Replicas is the most recently observed number of replicas.",
    ),
    (
        "Ready",
        "integer",
        0,
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const STATEFUL_SET: &[Def] = &[
    ("Ready", "string", 0, "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

const DAEMON_SET: &[Def] = &[
    (
        "Desired",
        "integer",
        0,
        "The desired number of daemon pods.",
    ),
    (
        "Current",
        "integer",
        0,
        "The number of nodes running at least one daemon pod.",
    ),
    (
        "Ready",
        "integer",
        0,
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    (
        "Up-to-date",
        "integer",
        0,
        "The total number of nodes that are running updated daemon pod",
    ),
    (
        "Available",
        "integer",
        0,
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
    ),
    (
        "Node Selector",
        "string",
        0,
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const JOB: &[Def] = &[
    ("Status", "string", 0, "Status of the job."),
    (
        "Completions",
        "string",
        0,
        "The desired number of successfully finished pods the job should be run with.",
    ),
    (
        "Duration",
        "string",
        0,
        "Time required to complete the job.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const CRON_JOB: &[Def] = &[
    (
        "Schedule",
        "string",
        0,
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    (
        "Timezone",
        "string",
        0,
        "The time zone name for the given schedule.",
    ),
    (
        "Suspend",
        "boolean",
        0,
        "This flag tells the controller to suspend subsequent executions.",
    ),
    (
        "Active",
        "integer",
        0,
        "A list of pointers to currently running jobs.",
    ),
    (
        "Last Schedule",
        "date",
        0,
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

const SERVICE_ACCOUNT: &[Def] = &[
    (
        "Secrets",
        "integer",
        0,
        "Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount.",
    ),
    AGE,
];

const PERSISTENT_VOLUME_CLAIM: &[Def] = &[
    (
        "Status",
        "string",
        0,
        "Phase represents the current phase of PersistentVolumeClaim.",
    ),
    (
        "Volume",
        "string",
        0,
        "VolumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    (
        "Capacity",
        "string",
        0,
        "Capacity represents the actual resources of the underlying volume.",
    ),
    (
        "Access Modes",
        "string",
        0,
        "AccessModes contains the desired access modes the volume should have.",
    ),
    (
        "StorageClass",
        "string",
        0,
        "StorageClassName is the name of the StorageClass required by the claim.",
    ),
    (
        "VolumeAttributesClass",
        "string",
        0,
        "VolumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim.",
    ),
    AGE,
    (
        "VolumeMode",
        "string",
        1,
        "volumeMode defines what type of volume is required by the claim.",
    ),
];

const INGRESS: &[Def] = &[
    (
        "Class",
        "string",
        0,
        "The name of the IngressClass resource that should be used.",
    ),
    (
        "Hosts",
        "string",
        0,
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    (
        "Address",
        "string",
        0,
        "Address is a list containing ingress points for the load-balancer",
    ),
    (
        "Ports",
        "string",
        0,
        "Ports of TLS configurations that open",
    ),
    AGE,
];

const NODE: &[Def] = &[
    ("Status", "string", 0, "The status of the node"),
    ("Roles", "string", 0, "The roles of the node"),
    AGE,
    (
        "Version",
        "string",
        0,
        "Kubelet Version reported by the node.",
    ),
    (
        "Internal-IP",
        "string",
        1,
        "List of internal IPs of the node.",
    ),
    (
        "External-IP",
        "string",
        1,
        "List of external IPs of the node.",
    ),
    (
        "OS-Image",
        "string",
        1,
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    (
        "Kernel-Version",
        "string",
        1,
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    (
        "Container-Runtime",
        "string",
        1,
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];

const SERVICE: &[Def] = &[
    ("Type", "string", 0, "The type of the service."),
    ("Cluster-IP", "string", 0, "The cluster IP of the service."),
    (
        "External-IP",
        "string",
        0,
        "The external IP of the service.",
    ),
    ("Port(s)", "string", 0, "The ports of the service."),
    AGE,
    SELECTOR,
];
