// The only module that reads pulumi.Config: it hands the stack's values to validation and returns
// typed settings, or throws before any resource is registered.
import * as pulumi from "@pulumi/pulumi";
import { getCredential } from "./runSecrets";
import { runtimeStackValues } from "./runtimeValues";
import type { PlatformSpec } from "../spec/types";
import { checkPlatformConfig } from "./validate";

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

/** The validated stack configuration and its secrets. */
export interface LoadedConfig {
  readonly spec: PlatformSpec;
  readonly secrets: PlatformSecrets;
  /** What the validation found valid but worth knowing (the program logs each as a warning). */
  readonly warnings: readonly string[];
}

/** Reads and validates the current stack's `talos-platform:*` keys. */
export function loadPlatformConfig(): LoadedConfig {
  const config = new pulumi.Config();
  const { values, presentKeys, secretKeys } = runtimeStackValues();
  const { spec, warnings } = checkPlatformConfig(
    { ...values, presentKeys, secretKeys, project: pulumi.getProject() },
    `Pulumi.${pulumi.getStack()}.yaml`,
  );
  return {
    spec,
    warnings,
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
