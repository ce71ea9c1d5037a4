// The only module that reads pulumi.Config: it hands the stack's values to validation and returns
// typed settings, or throws before any resource is registered.
import * as pulumi from "@pulumi/pulumi";
import type { PlatformSpec } from "./types";
import { validatePlatformConfig } from "./validate";

/** Secret inputs that never live in plain text in the stack file. */
export interface PlatformSecrets {
  /** `user@realm!tokenid=uuid`; when absent the Proxmox provider reads PROXMOX_VE_API_TOKEN. */
  readonly proxmoxApiToken?: pulumi.Output<string>;
  /** The private key Flux reads an ssh:// repository with. */
  readonly fluxDeployKey?: pulumi.Output<string>;
  /** A GCP service-account key (JSON); else application default credentials. */
  readonly gcpCredentials?: pulumi.Output<string>;
  /** The OCI API signing key (PEM); else ~/.oci/config or the OCI_* variables. */
  readonly ociPrivateKey?: pulumi.Output<string>;
  /** An OpenStack application credential secret; else clouds.yaml or the OS_* variables. */
  readonly openstackApplicationCredentialSecret?: pulumi.Output<string>;
  /** The private key (PEM) the Proxmox provider logs into the hosts with (proxmox.ssh without the agent). */
  readonly proxmoxSshPrivateKey?: pulumi.Output<string>;
  /** An existing service-account key (JSON) for OpenBao's unseal (openbao.credentials: existingKey). */
  readonly gcpUnsealCredentials?: pulumi.Output<string>;
}

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

/** Which of the program's secret keys the stack sets, without reading (or logging) their values. */
function presentSecretKeys(): Set<string> {
  const all = pulumi.runtime.allConfig();
  const project = pulumi.getProject();
  return new Set(FOUNDATION_SECRET_KEYS.filter((key) => `${project}:${key}` in all));
}

/** The validated stack configuration and its secrets. */
export interface LoadedConfig {
  readonly spec: PlatformSpec;
  readonly secrets: PlatformSecrets;
}

/** Reads and validates the current stack's `talos-platform:*` keys. */
export function loadPlatformConfig(): LoadedConfig {
  const config = new pulumi.Config();
  const stackFile = `Pulumi.${pulumi.getStack()}.yaml`;
  const spec = validatePlatformConfig(
    {
      cluster: config.getObject<unknown>("cluster"),
      nodes: config.getObject<unknown>("nodes"),
      proxmox: config.getObject<unknown>("proxmox"),
      oci: config.getObject<unknown>("oci"),
      openstack: config.getObject<unknown>("openstack"),
      gcp: config.getObject<unknown>("gcp"),
      openbao: config.getObject<unknown>("openbao"),
      dns: config.getObject<unknown>("dns"),
      flux: config.getObject<unknown>("flux"),
      secretKeys: presentSecretKeys(),
    },
    stackFile,
  );
  return {
    spec,
    secrets: {
      proxmoxApiToken: config.getSecret("proxmoxApiToken"),
      fluxDeployKey: config.getSecret("fluxDeployKey"),
      gcpCredentials: config.getSecret("gcpCredentials"),
      ociPrivateKey: config.getSecret("ociPrivateKey"),
      openstackApplicationCredentialSecret: config.getSecret(
        "openstackApplicationCredentialSecret",
      ),
      proxmoxSshPrivateKey: config.getSecret("proxmoxSshPrivateKey"),
      gcpUnsealCredentials: config.getSecret("gcpUnsealCredentials"),
    },
  };
}
