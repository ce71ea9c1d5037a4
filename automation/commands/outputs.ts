// Reading a stack's outputs: `outputs` prints them with secrets masked, and `kubeconfig` /
// `talosconfig` write the credential to a 0600 file and print only its path.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as path from "node:path";
import { stringify } from "yaml";
import type { CliContext } from "../context";
import { ExitCode, type ExitCodeValue, UserError } from "../errors";
import { writePrivateFile } from "../files";
import { type ReadRequest, readOutputs } from "../stackOutputs";
import { CREDENTIAL_OUTPUTS, type CredentialOutput } from "./outputNames";

// The reader lives below the commands (the day-two commands use it too); re-exported for callers.
export { type ReadRequest, readOutputs } from "../stackOutputs";

/** How a secret output is shown. */
const SECRET_PLACEHOLDER = "[secret]";

export * from "./outputNames";

/**
 * The outputs as shown: secrets replaced by `[secret]` unless `showSecrets`, and the credentials
 * replaced by a pointer to their command even then.
 */
function displayedOutputs(
  outputs: OutputMap,
  showSecrets: boolean,
  env: string,
): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const key of Object.keys(outputs).sort()) {
    const { value, secret } = outputs[key];
    if ((CREDENTIAL_OUTPUTS as readonly string[]).includes(key)) {
      shown[key] = showSecrets
        ? `${SECRET_PLACEHOLDER} (write it to a file with: npm run platform -- ${key} ${env})`
        : SECRET_PLACEHOLDER;
    } else {
      shown[key] = secret && !showSecrets ? SECRET_PLACEHOLDER : value;
    }
  }
  return shown;
}

/** `outputs <env>`: prints the outputs as YAML (or JSON). */
export async function showOutputs(
  ctx: CliContext,
  request: ReadRequest & { readonly showSecrets: boolean; readonly json: boolean },
): Promise<ExitCodeValue> {
  const outputs = await readOutputs(ctx, request);
  const shown = displayedOutputs(outputs, request.showSecrets, request.env);
  if (Object.keys(shown).length === 0) {
    ctx.stderr.write(`outputs ${request.layer}/${request.env}: the stack has no outputs yet\n`);
  }
  ctx.stdout.write(request.json ? `${JSON.stringify(shown, null, 2)}\n` : stringify(shown));
  return ExitCode.ok;
}

/** The default file of a credential: `<env>.kubeconfig` in the current folder (git-ignored). */
function defaultCredentialFile(kind: CredentialOutput, env: string): string {
  return `${env}.${kind}`;
}

/** `kubeconfig <env>` / `talosconfig <env>`: writes the credential with mode 0600, prints the path. */
export async function writeCredential(
  ctx: CliContext,
  request: ReadRequest & { readonly kind: CredentialOutput; readonly out?: string },
): Promise<ExitCodeValue> {
  const outputs = await readOutputs(ctx, request);
  const output = outputs[request.kind];
  if (output === undefined || typeof output.value !== "string" || output.value === "") {
    throw new UserError({
      what: `${request.layer}/${request.env}`,
      problem: `the stack has no ${request.kind} output`,
      got: JSON.stringify(Object.keys(outputs).sort()),
      fix:
        request.layer === "foundation"
          ? `Create the cluster first: npm run platform -- up ${request.env}`
          : "Use --layer foundation: the foundation layer exports the cluster's credentials",
    });
  }
  const file = path.resolve(
    ctx.cwd,
    request.out ?? defaultCredentialFile(request.kind, request.env),
  );
  writePrivateFile(file, output.value);
  const variable = request.kind === "kubeconfig" ? "KUBECONFIG" : "TALOSCONFIG";
  ctx.stdout.write(`${file}\n`);
  ctx.stderr.write(
    `wrote the ${request.kind} of ${request.layer}/${request.env} (mode 0600); use it with: export ${variable}=${file}\n`,
  );
  return ExitCode.ok;
}
