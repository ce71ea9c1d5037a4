// Names the command line needs before any command runs, kept apart from outputs.ts (which loads
// YAML and the engine's types) so `--help` and usage errors stay fast.

/** The credentials the foundation exports; their content never goes to stdout, even when asked. */
export const CREDENTIAL_OUTPUTS = ["kubeconfig", "talosconfig"] as const;

/** One of {@link CREDENTIAL_OUTPUTS}. */
export type CredentialOutput = (typeof CREDENTIAL_OUTPUTS)[number];
