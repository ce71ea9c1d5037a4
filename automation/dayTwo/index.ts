// Day-two operations of a running cluster: preflight, rolling Talos and Kubernetes upgrades, etcd
// snapshot and restore, node replacement, drift. See the README's "Day two" section.
export * from "./clock";
export * from "./cluster";
export * from "./configCompare";
export * from "./deps";
export * from "./drift";
export * from "./etcd";
export * from "./gates";
export * from "./kubectl";
export * from "./kubernetesUpgrade";
export * from "./preflight";
export * from "./preflightCommand";
export * from "./replaceNode";
export * from "./rollout";
export * from "./rolloutClient";
export * from "./snapshots";
export * from "./stackFile";
export * from "./talosClient";
export * from "./talosctl";
export * from "./talosctlOutput";
export * from "./talosUpgrade";
export * from "./upPreflight";
export * from "./upgradePath";
