// The bootstrap layer's program: the bucket the other layers keep their state in (and optionally the
// KMS key of their secrets). Its own state stays on the local file:// backend.
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { loadBootstrapConfig } from "./config/bootstrapLoad";
import { CiIdentities } from "./gcp/ciIdentities";
import { StateBucket } from "./gcp/stateBucket";

/** The bootstrap stack's outputs. */
export interface BootstrapOutputs {
  /** `gs://<bucket>`: set it as `talos-platform:backend` in the other layers' stack files. */
  readonly backendUrl: pulumi.Output<string>;
  /** `gcpkms://…`: the `secretsprovider` of stacks that should not use a passphrase. */
  readonly secretsProvider?: pulumi.Output<string>;
  /** `gcpkms://…` of each stack's own key (`secretsKeys`), by layer, then environment. */
  readonly secretsProviders?: Record<string, Record<string, pulumi.Output<string>>>;
  /** The Workload Identity providers of CI's identities, for the workflows' `workload_identity_provider`. */
  readonly ciWorkloadIdentityProviders?: Record<string, pulumi.Output<string>>;
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
    secretsKeys: spec.secretsKeys,
    provider,
  });
  const secretsProviders = spec.secretsKeys
    ? Object.fromEntries(
        Object.entries(state.keys).map(([layer, keys]) => [
          layer,
          Object.fromEntries(Object.entries(keys).map(([env, key]) => [env, key.secretsProvider])),
        ]),
      )
    : undefined;
  const identities =
    spec.ci && spec.secretsKeys
      ? new CiIdentities("ci", {
          project: spec.gcp.project,
          bucketName: state.bucketName,
          repository: spec.ci.repository,
          repositoryId: spec.ci.repositoryId,
          repositoryOwnerId: spec.ci.repositoryOwnerId,
          keys: state.keys,
          environments: spec.secretsKeys.environments,
          drift: spec.ci.drift,
          provider,
        })
      : undefined;
  return {
    backendUrl: state.backendUrl,
    ...(state.secretsProvider ? { secretsProvider: state.secretsProvider } : {}),
    ...(secretsProviders ? { secretsProviders } : {}),
    ...(identities
      ? {
          ciWorkloadIdentityProviders: identities.providers as Record<
            string,
            pulumi.Output<string>
          >,
        }
      : {}),
  };
}
