// Reads the bootstrap stack's config from the Pulumi runtime (the program under the engine); the
// validation itself is bootstrap.ts, which `validate` runs on a stack file without loading the SDK.
import * as pulumi from "@pulumi/pulumi";
import { type BootstrapSpec, validateBootstrapConfig } from "./bootstrap";
import { getCredential } from "./runSecrets";
import { runtimeStackValues } from "./runtimeValues";

/** Reads and validates the current bootstrap stack's config, and its one secret. */
export function loadBootstrapConfig(): {
  spec: BootstrapSpec;
  /** A GCP service-account key (JSON), when the CLI found one; else application default credentials. */
  gcpCredentials: pulumi.Output<string> | undefined;
} {
  const config = new pulumi.Config();
  const { values, secretKeys } = runtimeStackValues();
  const spec = validateBootstrapConfig(
    { ...values },
    `bootstrap/Pulumi.${pulumi.getStack()}.yaml`,
    secretKeys,
    pulumi.getProject(),
  );
  return { spec, gcpCredentials: getCredential(config, "gcpCredentials") };
}
