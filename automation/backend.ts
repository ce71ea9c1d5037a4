// Where a stack's state lives and how its secrets are encrypted.
//
// Backend, first match wins:
//   1. the PULUMI_BACKEND_URL environment variable (non-empty), as for the Pulumi CLI itself;
//   2. `<project>:backend` in the stack file (`gs://…`, the bucket the bootstrap layer creates);
//   3. `backend.url` in the layer's Pulumi.yaml;
//   4. the embedded default: `file://<repo>/.pulumi-state` (git-ignored).
// Secrets provider: the stack file's own top-level `secretsprovider:` (`gcpkms://…`), else
// `passphrase`. With the passphrase provider on the default backend and neither
// PULUMI_CONFIG_PASSPHRASE nor PULUMI_CONFIG_PASSPHRASE_FILE set, a random passphrase is generated
// once into `.pulumi-state/passphrase` (0600) and handed to Pulumi through
// PULUMI_CONFIG_PASSPHRASE_FILE.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { maskUrl, urlCredential } from "../components/config/urlCredentials";
import { ExitCode, UserError } from "./errors";
import { createPrivateFileOnce, ensurePrivateDir } from "./files";
import { type Env, isCi } from "./env";
import type { Layer, StackFile } from "./layers";

/** The embedded default backend's folder, relative to the repository root. */
const STATE_DIR = ".pulumi-state";
/** The generated passphrase's file name inside {@link STATE_DIR}. */
const PASSPHRASE_FILE = "passphrase";

/** The chosen backend and why. */
export interface BackendChoice {
  readonly url: string;
  /** Which rule chose it, for `stacks` and for error messages. */
  readonly source: string;
  /** The embedded `.pulumi-state` folder. */
  readonly isDefault: boolean;
}

/** The chosen secrets provider and why. */
interface SecretsChoice {
  readonly provider: string;
  readonly source: string;
}

const BACKEND_SCHEMES = /^(file|gs|s3|azblob|https?|postgres):\/\//;

/** The absolute path of the embedded state folder. */
export function stateDir(repoRoot: string): string {
  return path.join(repoRoot, STATE_DIR);
}

/** Applies the backend precedence documented at the top of this file. */
export function chooseBackend(input: {
  readonly env: Env;
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly repoRoot: string;
}): BackendChoice {
  return refuseUrlCredential(chooseBackendUnchecked(input));
}

/**
 * A backend URL carrying a credential (`postgres://user:password@…`, `?token=…`) is refused
 * wherever it came from: the CLI prints the backend on every run (`stacks`, `preview`, `init`, the
 * commands it suggests), and a URL is no place for a secret. The message shows it masked.
 */
function refuseUrlCredential(choice: BackendChoice): BackendChoice {
  const credential = urlCredential(choice.url);
  if (credential === undefined) return choice;
  throw new UserError({
    what: `backend (${choice.source})`,
    problem: `must not carry a credential in its URL, and it holds ${credential}`,
    got: JSON.stringify(maskUrl(choice.url)),
    fix:
      "Take the credential out of the URL and give it to the backend's client the way it reads it " +
      "outside a URL (cloud credentials for gs://, s3:// and azblob://, PULUMI_ACCESS_TOKEN for Pulumi Cloud)",
  });
}

function chooseBackendUnchecked(input: {
  readonly env: Env;
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly repoRoot: string;
}): BackendChoice {
  const fromEnv = input.env.PULUMI_BACKEND_URL;
  if (fromEnv !== undefined && fromEnv !== "") {
    return { url: fromEnv, source: "PULUMI_BACKEND_URL", isDefault: false };
  }
  const key = `${input.layer.project}:backend`;
  const fromStack = input.stackFile.config[key];
  if (fromStack !== undefined) {
    if (typeof fromStack !== "string" || !BACKEND_SCHEMES.test(fromStack)) {
      throw new UserError({
        what: `${path.basename(input.stackFile.path)} ${key}`,
        problem: "must be a backend URL in plain text",
        got: JSON.stringify(fromStack),
        fix: "Use e.g. gs://<bucket>/<prefix>, s3://…, azblob://…, file://<folder> or https://api.pulumi.com",
      });
    }
    return {
      url: fromStack,
      source: `${path.basename(input.stackFile.path)} (${key})`,
      isDefault: false,
    };
  }
  if (input.layer.projectBackendUrl !== undefined) {
    return {
      url: input.layer.projectBackendUrl,
      source: "Pulumi.yaml (backend.url)",
      isDefault: false,
    };
  }
  return { url: `file://${stateDir(input.repoRoot)}`, source: "default", isDefault: true };
}

/** A KMS secrets provider (`gcpkms://`, `awskms://`, …): its data key lives in `encryptedkey`. */
export function isKmsSecretsProvider(provider: string | undefined): boolean {
  return (
    provider !== undefined && /^[a-z]+kms:\/\/|^azurekeyvault:\/\/|^hashivault:\/\//.test(provider)
  );
}

/** The stack file's `secretsprovider:`, else the passphrase provider. */
export function chooseSecretsProvider(stackFile: StackFile): SecretsChoice {
  return stackFile.secretsProvider !== undefined
    ? {
        provider: stackFile.secretsProvider,
        source: `${path.basename(stackFile.path)} (secretsprovider)`,
      }
    : { provider: "passphrase", source: "default" };
}

/** Environment variables for the Pulumi CLI, and what the operator must be told. */
interface PassphraseSetup {
  readonly envVars: Readonly<Record<string, string>>;
  /** The passphrase file created by this run, if any (the operator must back it up). */
  readonly generatedFile?: string;
}

/**
 * Makes a passphrase available when the passphrase provider is used. Pulumi treats a defined
 * PULUMI_CONFIG_PASSPHRASE (even empty) as the passphrase, so only when neither variable is defined
 * does the CLI step in, and only for the embedded backend: for a shared backend a locally generated
 * passphrase would not decrypt what others wrote, so that is an error instead.
 */
export function preparePassphrase(input: {
  readonly env: Env;
  readonly secrets: SecretsChoice;
  readonly backend: BackendChoice;
  readonly repoRoot: string;
  /** Generate the passphrase when there is none (commands that may create the stack). */
  readonly mayCreate: boolean;
  /** Random bytes, injectable for tests. */
  readonly random?: (size: number) => Buffer;
}): PassphraseSetup {
  if (!/^passphrase(:|$)/.test(input.secrets.provider)) return { envVars: {} };
  if (
    isCi(input.env) &&
    input.env.PULUMI_CONFIG_PASSPHRASE === "" &&
    !input.env.PULUMI_CONFIG_PASSPHRASE_FILE
  ) {
    // A workflow's `${{ secrets.X }}` of a secret that does not exist is an empty string, which
    // Pulumi would take as the passphrase.
    throw new UserError(
      {
        what: "secrets",
        problem: "PULUMI_CONFIG_PASSPHRASE is set but empty (in CI: a secret that does not exist)",
        got: '""',
        fix: "Create the secret in the job's environment, or give the stack a KMS secrets provider (secretsprovider: gcpkms://…)",
      },
      ExitCode.usage,
    );
  }
  if (
    input.env.PULUMI_CONFIG_PASSPHRASE !== undefined ||
    input.env.PULUMI_CONFIG_PASSPHRASE_FILE !== undefined
  ) {
    return { envVars: {} };
  }
  if (!input.backend.isDefault) {
    throw new UserError(
      {
        what: "secrets",
        problem: `the passphrase provider needs PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE with backend ${input.backend.url}`,
        got: "neither",
        fix: "Set one of them to the stack's passphrase, or give the stack a KMS secrets provider (secretsprovider: gcpkms://…)",
      },
      ExitCode.usage,
    );
  }
  const dir = stateDir(input.repoRoot);
  const file = path.join(dir, PASSPHRASE_FILE);
  if (fs.existsSync(file)) return { envVars: { PULUMI_CONFIG_PASSPHRASE_FILE: file } };
  if (!input.mayCreate) return { envVars: {} };
  ensurePrivateDir(dir);
  const passphrase = (input.random ?? randomBytes)(32).toString("base64url");
  const created = createPrivateFileOnce(file, `${passphrase}\n`);
  return {
    envVars: { PULUMI_CONFIG_PASSPHRASE_FILE: file },
    ...(created ? { generatedFile: file } : {}),
  };
}

/** Everything the Pulumi CLI needs to act on one stack. */
interface StackSettings {
  readonly backend: BackendChoice;
  readonly secrets: SecretsChoice;
  /** Variables added to the Pulumi CLI's environment. */
  readonly envVars: Readonly<Record<string, string>>;
  /** Lines the operator must read (a generated passphrase to back up). */
  readonly notices: readonly string[];
}

/** Chooses backend and secrets provider for a stack and prepares the CLI's environment. */
export function resolveStackSettings(input: {
  readonly env: Env;
  readonly layer: Layer;
  readonly stackFile: StackFile;
  readonly repoRoot: string;
  readonly mayCreate: boolean;
  readonly random?: (size: number) => Buffer;
}): StackSettings {
  const backend = chooseBackend(input);
  const secrets = chooseSecretsProvider(input.stackFile);
  // The file backend needs its folder to exist; it holds state, so it is private.
  if (backend.isDefault) ensurePrivateDir(stateDir(input.repoRoot));
  const passphrase = preparePassphrase({ ...input, backend, secrets });
  const notices = passphrase.generatedFile
    ? [
        `Generated a passphrase for the stack secrets in ${passphrase.generatedFile} (mode 0600). ` +
          "Back it up (e.g. in your password manager): without it the secrets in this state cannot be decrypted.",
      ]
    : [];
  return {
    backend,
    secrets,
    envVars: {
      PULUMI_BACKEND_URL: backend.url,
      PULUMI_SKIP_UPDATE_CHECK: "true",
      ...passphrase.envVars,
    },
    notices,
  };
}
