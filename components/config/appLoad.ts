// Reads the app stack's config from the Pulumi runtime (the program under the engine); the
// validation itself is app.ts, which `validate` runs on a stack file without loading the SDK.
import * as pulumi from "@pulumi/pulumi";
import { type AppSecrets, type AppSpec, validateAppConfig } from "./app";
import { getCredential } from "./runSecrets";
import { runtimeStackValues } from "./runtimeValues";

/** Reads and validates the current app stack's config and files. */
export function loadAppConfig(): { spec: AppSpec; secrets: AppSecrets } {
  const config = new pulumi.Config();
  const { values, secretKeys } = runtimeStackValues();
  const spec = validateAppConfig({ ...values }, pulumi.getStack(), secretKeys, pulumi.getProject());
  return {
    spec,
    secrets: {
      openbaoToken: getCredential(config, "openbaoToken"),
      openbaoJwt: getCredential(config, "openbaoJwt"),
      // Only the main branch may apply; GitHub Actions sets GITHUB_REF for every job.
      openbaoJwtRole:
        process.env.GITHUB_REF === `refs/heads/${spec.openbao.ci?.branch ?? "main"}`
          ? "ci-apply"
          : "ci-preview",
      grafanaAuth: getCredential(config, "grafanaAuth"),
    },
  };
}
