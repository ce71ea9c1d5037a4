// The one seam between the CLI and the Pulumi engine: a factory that finds the Pulumi CLI and opens a
// stack of a layer's project folder. Production uses the Automation API's LocalWorkspace; tests
// inject a fake that plays recorded engine events, so no Pulumi CLI is needed to test the CLI.
import {
  type EngineEvent,
  LocalWorkspace,
  type OutputMap,
  PulumiCommand,
  type Stack,
} from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { RUN_SECRETS_FILE_ENV } from "../components/config/runSecretsEnv";
import { CONVERGE_ENV, type ConvergeRequest } from "../components/talos/convergence";
import { SHELL_CREDENTIALS } from "./credentials";
import { type PulumiCommandSource, resolvePulumiCommand } from "./pulumiCli";

/** Options every engine operation takes. */
export interface OperationOptions {
  /**
   * What the CLI's sequenced steps reached, for the foundation program (`up`, `preview`; see
   * components/talos/convergence.ts), handed over in the engine's environment.
   */
  readonly converge?: ConvergeRequest;
  /** Receives every engine event as it happens. */
  readonly onEvent: (event: EngineEvent) => void;
  /** Receives the engine's own text output (only wanted for `preview --diff`). */
  readonly onOutput?: (text: string) => void;
  /** Aborting asks the engine to cancel gracefully (SIGINT to the Pulumi CLI). */
  readonly signal?: AbortSignal;
  /** URNs the operation leaves alone (`--exclude`; Pulumi CLI 3.157 or later). */
  readonly exclude?: readonly string[];
}

/** One resource in a stack's state, as `pulumi stack export` lists it. */
export interface StateResource {
  readonly urn: string;
  /** The type token, e.g. `talos:machine/bootstrap:Bootstrap`. */
  readonly type: string;
}

/** What the CLI needs from one stack. */
export interface StackOperations {
  preview(options: OperationOptions & { readonly diff?: boolean }): Promise<void>;
  up(options: OperationOptions): Promise<void>;
  refresh(options: OperationOptions): Promise<void>;
  destroy(options: OperationOptions): Promise<void>;
  /** The stack's outputs; `secret` marks values that were secret. */
  outputs(): Promise<OutputMap>;
  /** The resources in the stack's state (from `pulumi stack export`; nothing is decrypted). */
  stateResources(): Promise<StateResource[]>;
  /**
   * Clears the `protect` flag of these resources in the state (export, then import), so the next
   * run may delete them: a control plane that left etcd. Nothing else of the state changes.
   */
  unprotect(urns: readonly string[]): Promise<void>;
}

/** Which stack to open, and how. */
export interface OpenStackRequest {
  /** The layer's project folder (where Pulumi.yaml and the stack files are). */
  readonly workDir: string;
  /** The environment, i.e. the stack name. */
  readonly stackName: string;
  /** Variables for the Pulumi CLI: backend URL, passphrase file. */
  readonly envVars: Readonly<Record<string, string>>;
  /** Used when the stack is created. */
  readonly secretsProvider: string;
  /** Create the stack if the backend does not have it (preview, up); otherwise it must exist. */
  readonly create: boolean;
  /**
   * Credentials for the program (full config keys), handed over in a file the program reads and
   * deletes ({@link RUN_SECRETS_FILE_ENV}): never on a command line, in the stack file or in any
   * process's environment.
   */
  readonly runSecrets?: Readonly<Record<string, string>>;
}

/** The Pulumi CLI that was found. */
export interface CliInfo {
  readonly command: string;
  readonly version: string;
}

/** Finds the Pulumi CLI and opens stacks. */
export interface WorkspaceFactory {
  /**
   * Finds the Pulumi CLI, or installs it when `install` is set; rejects with a UserError saying
   * what to install when it is missing. Called before anything is written.
   */
  ensureCli(options: { readonly install: boolean }): Promise<CliInfo>;
  /** Opens (selects, or creates) a stack; {@link ensureCli} must have succeeded. */
  openStack(request: OpenStackRequest): Promise<StackOperations>;
}

/** How the production factory finds the Pulumi CLI (tests point it at a fake executable). */
interface LocalWorkspaceOptions {
  readonly homeDir?: string;
  /** @default PulumiCommand.get / PulumiCommand.install */
  readonly cliSource?: PulumiCommandSource<PulumiCommand>;
}

/**
 * The engine's environment for one stack: the backend and passphrase variables; the credentials
 * file's variable set empty (each preview and up names its own file, {@link stackOperations}), so a
 * value left in the operator's shell never reaches the program; and the shell's credential
 * variables blanked. The Automation API passes these to the Pulumi CLI's process environment over
 * its own (an empty value overrides an inherited one), never its argv.
 */
function engineEnvironment(request: OpenStackRequest): Record<string, string> {
  return {
    ...Object.fromEntries(SHELL_CREDENTIALS.map((name) => [name, ""])),
    ...request.envVars,
    [RUN_SECRETS_FILE_ENV]: "",
    // Set per operation (stackOperations); empty, so a value left in a shell never reaches the program.
    [CONVERGE_ENV]: "",
  };
}

/** The production factory: Automation API LocalWorkspace over the layer's project folder. */
export function localWorkspaceFactory(options: LocalWorkspaceOptions = {}): WorkspaceFactory {
  let command: PulumiCommand | undefined;
  return {
    async ensureCli({ install }) {
      command ??= await resolvePulumiCommand({
        source: options.cliSource ?? {
          get: (opts) => PulumiCommand.get(opts),
          install: (opts) => PulumiCommand.install(opts),
        },
        install,
        ...(options.homeDir ? { homeDir: options.homeDir } : {}),
      });
      return { command: command.command, version: command.version?.toString() ?? "unknown" };
    },
    async openStack(request) {
      if (!command) throw new Error("openStack called before ensureCli");
      const args = { stackName: request.stackName, workDir: request.workDir };
      // The stack file is never written by the CLI: only the engine writes it (the secrets
      // provider's encryptedkey/encryptionsalt when it creates the stack or the data key).
      const workspaceOptions = {
        pulumiCommand: command,
        envVars: engineEnvironment(request),
        secretsProvider: request.secretsProvider,
      };
      const stack = request.create
        ? await LocalWorkspace.createOrSelectStack(args, workspaceOptions)
        : await LocalWorkspace.selectStack(args, workspaceOptions);
      return stackOperations(stack, request.runSecrets ?? {});
    },
  };
}

/**
 * Runs `operation` of a program with the run's credentials in a file of their own: 0600 in a fresh
 * 0700 folder under the run's private temp folder (TMPDIR, automation/runTemp.ts), named in
 * {@link RUN_SECRETS_FILE_ENV} for this operation only. The program deletes it as it reads it,
 * before it registers anything, so no provider plugin finds it; the folder goes when the operation
 * ends, whatever happened (a killed run's folder goes with the run's at the next start).
 */
async function withRunSecretsFile<T>(
  stack: Stack,
  secrets: Readonly<Record<string, string>>,
  operation: () => Promise<T>,
): Promise<T> {
  if (Object.keys(secrets).length === 0) return operation();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "run-secrets-"));
  const file = path.join(dir, "secrets.json");
  try {
    fs.writeFileSync(file, JSON.stringify(secrets), { mode: 0o600, flag: "wx" });
    stack.workspace.envVars[RUN_SECRETS_FILE_ENV] = file;
    return await operation();
  } finally {
    stack.workspace.envVars[RUN_SECRETS_FILE_ENV] = "";
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Adapts an Automation API Stack to {@link StackOperations}. Only `preview` and `up` run the program,
 * so only they get the credentials file: `refresh` and `destroy` configure providers from the state.
 */
export function stackOperations(
  stack: Stack,
  runSecrets: Readonly<Record<string, string>> = {},
): StackOperations {
  const common = (options: OperationOptions) => {
    // The workspace's variables reach every Pulumi command it runs from here on.
    stack.workspace.envVars[CONVERGE_ENV] = options.converge
      ? JSON.stringify(options.converge)
      : "";
    return {
      onEvent: options.onEvent,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.exclude && options.exclude.length > 0 ? { exclude: [...options.exclude] } : {}),
    };
  };
  return {
    async preview(options) {
      await withRunSecretsFile(stack, runSecrets, () =>
        stack.preview({ ...common(options), ...(options.diff ? { diff: true } : {}) }),
      );
    },
    async up(options) {
      await withRunSecretsFile(stack, runSecrets, () => stack.up(common(options)));
    },
    async refresh(options) {
      await stack.refresh(common(options));
    },
    async destroy(options) {
      await stack.destroy(common(options));
    },
    outputs: () => stack.outputs(),
    async stateResources() {
      const exported = await stack.exportStack();
      const resources = (exported.deployment as { resources?: unknown } | undefined)?.resources;
      return (Array.isArray(resources) ? (resources as Partial<StateResource>[]) : [])
        .filter((r) => typeof r.urn === "string" && typeof r.type === "string")
        .map((r) => ({ urn: r.urn!, type: r.type! }));
    },
    async unprotect(urns) {
      const exported = await stack.exportStack();
      const deployment = exported.deployment as {
        resources?: { urn?: string; protect?: boolean }[];
      };
      for (const resource of deployment.resources ?? []) {
        if (resource.urn && urns.includes(resource.urn)) resource.protect = false;
      }
      await stack.importStack(exported);
    },
  };
}
