// Shared test doubles for the automation CLI: a recording fake workspace factory that plays recorded
// engine events, in-memory terminals, temporary repositories with layer folders and stack files.
import type { GcsRequest } from "../../automation/gcs";
import type { EngineEvent, OutputMap } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { CliContext } from "../../automation/context";
import type { Operation } from "../../automation/guards";
import type { TextSink } from "../../automation/progress";
import type {
  CliInfo,
  OpenStackRequest,
  OperationOptions,
  StackOperations,
  StateResource,
  WorkspaceFactory,
} from "../../automation/workspace";

/** The repository root. */
export const ROOT = path.resolve(__dirname, "..", "..");

/** Recorded engine events of one run (NDJSON, as the engine's event log writes them). */
export function loadEngineEvents(name: string): EngineEvent[] {
  const file = path.join(ROOT, "test", "fixtures", "engine-events", `${name}.ndjson`);
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as EngineEvent);
}

/** A terminal or log in memory. */
export class MemorySink implements TextSink {
  text = "";
  constructor(
    readonly isTTY = false,
    readonly columns?: number,
  ) {}
  write(text: string): void {
    this.text += text;
  }
}

/** Removes ANSI escapes. */
export function stripAnsi(text: string): string {
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, "");
}

/** What a fake stack does for one operation. */
export interface ScriptedRun {
  /** Events played to onEvent, in order. */
  readonly events?: readonly EngineEvent[];
  /** Rejects with this after playing the events. */
  readonly error?: unknown;
  /** Text sent to onOutput (preview --diff). */
  readonly output?: string;
}

/** One call the CLI made to the fake. */
export type FakeCall =
  | { readonly kind: "ensureCli"; readonly install: boolean }
  | { readonly kind: "openStack"; readonly request: OpenStackRequest }
  | {
      readonly kind: "operation";
      readonly operation: Operation;
      readonly workDir: string;
      readonly stackName: string;
      readonly diff: boolean;
      readonly signal: boolean;
      /** What the CLI's sequenced steps told the program (components/talos/convergence.ts). */
      readonly converge?: unknown;
      readonly exclude?: readonly string[];
    }
  | { readonly kind: "outputs"; readonly workDir: string; readonly stackName: string }
  | { readonly kind: "stateResources"; readonly workDir: string; readonly stackName: string }
  | { readonly kind: "unprotect"; readonly urns: readonly string[] };

/** A workspace factory that records every call and plays scripted runs. */
export class FakeWorkspaces implements WorkspaceFactory {
  readonly calls: FakeCall[] = [];
  /** Rejection of ensureCli (e.g. the missing-CLI UserError). */
  cliError?: unknown;
  /** Rejection of openStack. */
  openError?: unknown;
  /** Scripted runs by operation; a missing one succeeds with no events. */
  runs: Partial<Record<Operation, ScriptedRun>> = {};
  outputs: OutputMap = {};
  /** The resources `pulumi stack export` would list. */
  state: StateResource[] = [];
  /** Runs a callback while an operation is under way (to observe locks, files). */
  during?: (operation: Operation, converge?: unknown) => void | Promise<void>;

  async ensureCli(options: { install: boolean }): Promise<CliInfo> {
    this.calls.push({ kind: "ensureCli", install: options.install });
    if (this.cliError !== undefined) throw this.cliError;
    return { command: "pulumi", version: "3.276.0" };
  }

  async openStack(request: OpenStackRequest): Promise<StackOperations> {
    this.calls.push({ kind: "openStack", request });
    if (this.openError !== undefined) throw this.openError;
    const run =
      (operation: Operation) => async (options: OperationOptions & { diff?: boolean }) => {
        this.calls.push({
          kind: "operation",
          operation,
          workDir: request.workDir,
          stackName: request.stackName,
          diff: options.diff === true,
          signal: options.signal !== undefined,
          ...(options.converge ? { converge: options.converge } : {}),
          ...(options.exclude ? { exclude: [...options.exclude] } : {}),
        });
        await this.during?.(operation, options.converge);
        const script = this.runs[operation] ?? {};
        if (script.output !== undefined) options.onOutput?.(script.output);
        for (const event of script.events ?? []) options.onEvent(event);
        if (script.error !== undefined) throw script.error;
      };
    return {
      preview: run("preview"),
      up: run("up"),
      refresh: run("refresh"),
      destroy: run("destroy"),
      outputs: async () => {
        this.calls.push({
          kind: "outputs",
          workDir: request.workDir,
          stackName: request.stackName,
        });
        return this.outputs;
      },
      stateResources: async () => {
        this.calls.push({
          kind: "stateResources",
          workDir: request.workDir,
          stackName: request.stackName,
        });
        return this.state;
      },
      unprotect: async (urns: readonly string[]) => {
        this.calls.push({ kind: "unprotect", urns: [...urns] });
      },
    };
  }

  /** The calls of one kind. */
  callsOf<K extends FakeCall["kind"]>(kind: K): Extract<FakeCall, { kind: K }>[] {
    return this.calls.filter((call): call is Extract<FakeCall, { kind: K }> => call.kind === kind);
  }
}

const FOUNDATION_PROJECT = "name: talos-platform\nruntime: nodejs\nmain: index.ts\n";

/** A layer folder to create in a temporary repository. */
export interface LayerFixture {
  /** Project name in Pulumi.yaml; omit the whole entry for a layer without a folder. */
  readonly project: string;
  /** Stack files by environment: their YAML text. */
  readonly stacks: Record<string, string>;
  /** Extra Pulumi.yaml lines (e.g. a `backend:` block). */
  readonly projectExtra?: string;
}

/** A temporary repository with the given layers; removed by {@link cleanupRepos}. */
export function makeRepo(
  layers: {
    foundation?: LayerFixture | null;
    bootstrap?: LayerFixture;
    app?: LayerFixture;
  } = {},
): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "platform-cli-"));
  created.push(root);
  const foundation =
    layers.foundation === null
      ? undefined
      : (layers.foundation ?? {
          project: "talos-platform",
          stacks: { staging: "config: {}\n", prod: "config: {}\n" },
        });
  const write = (dir: string, layer: LayerFixture) => {
    fs.mkdirSync(dir, { recursive: true });
    const project =
      layer.project === "talos-platform"
        ? FOUNDATION_PROJECT
        : `name: ${layer.project}\nruntime: nodejs\n`;
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), project + (layer.projectExtra ?? ""));
    for (const [env, text] of Object.entries(layer.stacks)) {
      fs.writeFileSync(path.join(dir, `Pulumi.${env}.yaml`), text);
    }
  };
  if (foundation) write(root, foundation);
  if (layers.bootstrap) write(path.join(root, "bootstrap"), layers.bootstrap);
  if (layers.app) write(path.join(root, "app"), layers.app);
  return root;
}

const created: string[] = [];

/** Removes every repository {@link makeRepo} created. */
export function cleanupRepos(): void {
  for (const dir of created.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A controllable clock. */
export class FakeClock {
  constructor(public now = 1_790_000_000_000) {}
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/** A test context over a temporary repository and a fake workspace factory. */
/**
 * An in-memory Cloud Storage bucket behind the requests the CLI makes (media upload, media download,
 * delete), with generation preconditions as GCS documents them: `ifGenerationMatch=0` only if
 * absent, else only at that generation (412 otherwise).
 */
export function memoryGcs(): GcsRequest & {
  objects: Map<string, { body: string; generation: number }>;
} {
  const objects = new Map<string, { body: string; generation: number }>();
  let next = 1000;
  const request: GcsRequest = async (method, address, body) => {
    const url = new URL(address);
    const precondition = url.searchParams.get("ifGenerationMatch");
    const matches = (name: string) => {
      if (precondition === null) return true;
      const current = objects.get(name);
      return precondition === "0"
        ? current === undefined
        : current?.generation === Number(precondition);
    };
    const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const object = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    if (method === "POST" && upload && url.searchParams.get("uploadType") === "media") {
      const name = `${upload[1]}/${url.searchParams.get("name")}`;
      if (!matches(name)) return { status: 412, body: "conditionNotMet" };
      const generation = next++;
      objects.set(name, { body: body ?? "", generation });
      return { status: 200, body: JSON.stringify({ name }), generation: String(generation) };
    }
    if (object) {
      const name = `${object[1]}/${decodeURIComponent(object[2])}`;
      const current = objects.get(name);
      if (!current) return { status: 404, body: "No such object" };
      if (method === "GET" && url.searchParams.get("alt") === "media") {
        return { status: 200, body: current.body, generation: String(current.generation) };
      }
      if (method === "DELETE") {
        if (!matches(name)) return { status: 412, body: "conditionNotMet" };
        objects.delete(name);
        return { status: 204, body: "" };
      }
    }
    return { status: 400, body: `unexpected ${method} ${address}` };
  };
  return Object.assign(request, { objects });
}

export function testContext(
  overrides: Partial<CliContext> & { repoRoot: string },
): CliContext & { stdout: MemorySink; stderr: MemorySink; workspaces: FakeWorkspaces } {
  const workspaces =
    overrides.workspaces instanceof FakeWorkspaces ? overrides.workspaces : new FakeWorkspaces();
  const stdout = overrides.stdout instanceof MemorySink ? overrides.stdout : new MemorySink();
  const stderr = overrides.stderr instanceof MemorySink ? overrides.stderr : new MemorySink();
  return {
    cwd: overrides.repoRoot,
    env: {},
    clock: new FakeClock().read,
    host: { pid: process.pid, hostname: "test-host", isAlive: () => true },
    random: (size: number) => Buffer.alloc(size, 7),
    // The stack files of engine-run tests are placeholders; readiness tests pass the real validation.
    validateStack: () => ({ problems: [], warnings: [] }),
    gcs: memoryGcs(),
    ...overrides,
    workspaces,
    stdout,
    stderr,
  };
}

/** One bare-metal control plane: valid, and needs no credential. */
export const METAL_STACK = [
  "config:",
  "  talos-platform:cluster:",
  "    name: demo",
  "    endpoint: 192.0.2.11",
  "    talosVersion: v1.13.9",
  "    kubernetesVersion: 1.36.3",
  "  talos-platform:nodes:",
  "    - name: cp-1",
  "      role: controlplane",
  "      platform: baremetal",
  "      baremetal: { address: 192.0.2.11 }",
  "",
].join("\n");
