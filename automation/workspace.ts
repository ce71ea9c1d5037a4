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
import * as path from "node:path";
import { resolvePulumiCommand } from "./pulumiCli";

/** Options every engine operation takes. */
export interface OperationOptions {
  /** Receives every engine event as it happens. */
  readonly onEvent: (event: EngineEvent) => void;
  /** Receives the engine's own text output (only wanted for `preview --diff`). */
  readonly onOutput?: (text: string) => void;
  /** Aborting asks the engine to cancel gracefully (SIGINT to the Pulumi CLI). */
  readonly signal?: AbortSignal;
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
   * Credentials (full config keys) set as secret config for each operation and taken out of the
   * stack file again afterwards, so they are neither kept nor committed.
   */
  readonly secretConfig?: Readonly<Record<string, string>>;
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

/** The production factory: Automation API LocalWorkspace over the layer's project folder. */
export function localWorkspaceFactory(
  options: { readonly homeDir?: string } = {},
): WorkspaceFactory {
  let command: PulumiCommand | undefined;
  return {
    async ensureCli({ install }) {
      command ??= await resolvePulumiCommand({
        source: {
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
      const workspaceOptions = {
        pulumiCommand: command,
        envVars: { ...request.envVars },
        secretsProvider: request.secretsProvider,
      };
      const stack = request.create
        ? await LocalWorkspace.createOrSelectStack(args, workspaceOptions)
        : await LocalWorkspace.selectStack(args, workspaceOptions);
      const stackFile = path.join(request.workDir, `Pulumi.${request.stackName}.yaml`);
      return stackOperations(stack, request.secretConfig ?? {}, stackFile);
    },
  };
}

/**
 * Runs `operation` with `values` set as secret config, then puts the stack file back exactly as it
 * was (the secrets were only ever there encrypted, and only for the run).
 */
export async function withSecretConfig<T>(
  stack: Pick<Stack, "setAllConfig">,
  values: Readonly<Record<string, string>>,
  stackFile: string,
  operation: () => Promise<T>,
): Promise<T> {
  const keys = Object.keys(values);
  if (keys.length === 0) return operation();
  const original = fs.existsSync(stackFile) ? fs.readFileSync(stackFile) : undefined;
  try {
    await stack.setAllConfig(
      Object.fromEntries(keys.map((key) => [key, { value: values[key], secret: true }])),
      false,
    );
    return await operation();
  } finally {
    if (original) fs.writeFileSync(stackFile, original);
    else fs.rmSync(stackFile, { force: true });
  }
}

/** Adapts an Automation API Stack to {@link StackOperations}. */
export function stackOperations(
  stack: Stack,
  secretConfig: Readonly<Record<string, string>> = {},
  stackFile = "",
): StackOperations {
  const withSecrets = <T>(operation: () => Promise<T>) =>
    withSecretConfig(stack, secretConfig, stackFile, operation);
  const common = (options: OperationOptions) => ({
    onEvent: options.onEvent,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return {
    async preview(options) {
      await withSecrets(() =>
        stack.preview({ ...common(options), ...(options.diff ? { diff: true } : {}) }),
      );
    },
    async up(options) {
      await withSecrets(() => stack.up(common(options)));
    },
    async refresh(options) {
      await withSecrets(() => stack.refresh(common(options)));
    },
    async destroy(options) {
      await withSecrets(() => stack.destroy(common(options)));
    },
    outputs: () => stack.outputs(),
    async stateResources() {
      const exported = await stack.exportStack();
      const resources = (exported.deployment as { resources?: unknown } | undefined)?.resources;
      return (Array.isArray(resources) ? (resources as Partial<StateResource>[]) : [])
        .filter((r) => typeof r.urn === "string" && typeof r.type === "string")
        .map((r) => ({ urn: r.urn!, type: r.type! }));
    },
  };
}
