// The only module that reads pulumi.Config: it hands the stack's values to validation and returns
// typed settings, or throws before any resource is registered.
import * as pulumi from "@pulumi/pulumi";
import { getCredential, presentCredentialKeys } from "./runSecrets";
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

/** Which of the program's secret keys the run or the stack sets, without reading their values. */
function presentSecretKeys(): Set<string> {
  return presentCredentialKeys(FOUNDATION_SECRET_KEYS);
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
      proxmoxApiToken: getCredential(config, "proxmoxApiToken"),
      fluxDeployKey: getCredential(config, "fluxDeployKey"),
      gcpCredentials: getCredential(config, "gcpCredentials"),
      ociPrivateKey: getCredential(config, "ociPrivateKey"),
      openstackApplicationCredentialSecret: getCredential(
        config,
        "openstackApplicationCredentialSecret",
      ),
      proxmoxSshPrivateKey: getCredential(config, "proxmoxSshPrivateKey"),
      gcpUnsealCredentials: getCredential(config, "gcpUnsealCredentials"),
    },
  };
}
