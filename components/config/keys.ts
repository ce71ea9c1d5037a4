// The top-level keys of each layer's stack-file namespace. Pure constants, shared by the validation,
// the loaders and the CLI.

/** The foundation project's name, the namespace of its keys (`talos-platform:cluster`). */
export const FOUNDATION_PROJECT = "talos-platform";

/** The secret keys the foundation program reads (the CLI resolves the same ones). */
export const FOUNDATION_SECRET_KEYS = [
  "proxmoxApiToken",
  "fluxDeployKey",
  "gcpCredentials",
  "ociPrivateKey",
  "openstackApplicationCredentialSecret",
  "proxmoxSshPrivateKey",
  "gcpUnsealCredentials",
] as const;

/** The foundation's settings keys: each one a section of the stack file. */
export const FOUNDATION_SETTINGS_KEYS = [
  "cluster",
  "nodes",
  "proxmox",
  "oci",
  "openstack",
  "gcp",
  "openbao",
  "dns",
  "flux",
  "etcdBackups",
] as const;

/** Keys the CLI reads from every layer's stack file (`<project>:backend`, the state backend URL). */
export const CLI_KEYS = ["backend"] as const;

/** Every key the foundation's namespace may hold. */
export const FOUNDATION_KEYS: readonly string[] = [
  ...FOUNDATION_SETTINGS_KEYS,
  ...FOUNDATION_SECRET_KEYS,
  ...CLI_KEYS,
];
