// The bootstrap layer's program: the bucket the other layers keep their state in (and optionally the
// KMS key of their secrets). Its own state stays on the local file:// backend.
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { loadBootstrapConfig } from "./config/bootstrapLoad";
import { StateBucket } from "./gcp/stateBucket";

/** The bootstrap stack's outputs. */
export interface BootstrapOutputs {
  /** `gs://<bucket>`: set it as `talos-platform:backend` in the other layers' stack files. */
  readonly backendUrl: pulumi.Output<string>;
  /** `gcpkms://…`: the `secretsprovider` of stacks that should not use a passphrase. */
  readonly secretsProvider?: pulumi.Output<string>;
}

/** Runs the bootstrap program for the current stack. */
export function bootstrapLayer(): BootstrapOutputs {
  const { spec, gcpCredentials } = loadBootstrapConfig();
  const provider = new gcp.Provider("bootstrap-gcp", {
    project: spec.gcp.project,
    region: spec.gcp.region,
    credentials: gcpCredentials,
  });
  const state = new StateBucket("state", {
    project: spec.gcp.project,
    bucketName: spec.stateBucket.name,
    location: spec.stateBucket.location,
    keepVersions: spec.stateBucket.keepVersions,
    secretsKey: spec.secretsKey,
    ciMembers: spec.ciMembers,
    provider,
  });
  return {
    backendUrl: state.backendUrl,
    ...(state.secretsProvider ? { secretsProvider: state.secretsProvider } : {}),
  };
}
