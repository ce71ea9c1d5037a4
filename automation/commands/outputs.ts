// Reading a stack's outputs: `outputs` prints them with secrets masked, and `kubeconfig` /
// `talosconfig` write the credential to a 0600 file and print only its path.
import type { OutputMap } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
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

/** The largest existing file compared with the credential: a kubeconfig is a few kilobytes. */
const MAX_COMPARED_BYTES = 1024 * 1024;

/**
 * Whether the credential's target exists (a regular file); refuses any other kind of file. A device
 * node, a symbolic link (whose target would be replaced), a folder or a huge file is never what an
 * operator meant to overwrite with a cluster credential.
 */
function credentialTarget(file: string): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  const kind = stat.isSymbolicLink()
    ? "a symbolic link"
    : stat.isDirectory()
      ? "a folder"
      : !stat.isFile()
        ? "a device, socket or pipe"
        : stat.size > MAX_COMPARED_BYTES
          ? `a file of ${stat.size} bytes`
          : undefined;
  if (kind === undefined) return true;
  throw new UserError({
    what: file,
    problem: "must be a regular file (or not exist yet) to hold a cluster credential",
    got: kind,
    fix: "Name a new file with --out (--force replaces only a regular file)",
  });
}

/** `kubeconfig <env>` / `talosconfig <env>`: writes the credential with mode 0600, prints the path. */
export async function writeCredential(
  ctx: CliContext,
  request: ReadRequest & {
    readonly kind: CredentialOutput;
    readonly out?: string;
    /** Replace an existing file with other content. */
    readonly force?: boolean;
  },
): Promise<ExitCodeValue> {
  const file = path.resolve(
    ctx.cwd,
    request.out ?? defaultCredentialFile(request.kind, request.env),
  );
  // Before the engine: a target that can never be written is refused at once.
  const existing = credentialTarget(file);
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
  if (existing && request.force !== true && fs.readFileSync(file, "utf8") !== output.value) {
    throw new UserError({
      what: file,
      problem: `already exists with other content (another cluster's ${request.kind}, or an older one)`,
      got: "an existing file",
      fix: `Name another file with --out, or rerun with --force to replace it`,
    });
  }
  writePrivateFile(file, output.value);
  const variable = request.kind === "kubeconfig" ? "KUBECONFIG" : "TALOSCONFIG";
  ctx.stdout.write(`${file}\n`);
  ctx.stderr.write(
    `wrote the ${request.kind} of ${request.layer}/${request.env} (mode 0600); use it with: export ${variable}=${file}\n`,
  );
  return ExitCode.ok;
}
