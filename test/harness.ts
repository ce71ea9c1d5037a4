// Runs the foundation program under the recording mocks with a given stack config.
import * as pulumi from "@pulumi/pulumi";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../components/repo/root";
import { Recorder } from "./mocks";

export const PROJECT = "talos-platform";
/** The repository root. */
export const ROOT = REPO_ROOT;
/**
 * Copies of the example stack files as they were when these tests were written: tests that check
 * particular values read these, so editing the repository's own stack files never breaks them
 * (test/stacks.test.ts checks the repository's files, whatever they hold).
 */
export const STACK_FIXTURES = path.join(ROOT, "test", "fixtures", "stacks");

/** The value of an Output (rejects when it failed). */
export function unwrap<T>(output: pulumi.Output<T> | T): Promise<T> {
  return pulumi.Output.isInstance(output)
    ? ((output as any).promise() as Promise<T>)
    : Promise.resolve(output as T);
}

/** Whether an Output is secret. */
export function isSecret<T>(output: pulumi.Output<T>): Promise<boolean> {
  return pulumi.isSecret(output);
}

/** A stack's config as `{ key-without-namespace: value }`, e.g. `{ cluster: {...}, nodes: [...] }`. */
export type StackValues = Record<string, unknown>;

/** Secrets the repository's stack files expect the CLI (or `pulumi config set --secret`) to supply. */
export const STACK_SECRETS: Readonly<Record<string, string>> = {
  fluxDeployKey:
    "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-SECRET-deploy-key\n-----END OPENSSH PRIVATE KEY-----\n",
};

/** The `talos-platform:*` values of a stack file fixture (see {@link STACK_FIXTURES}). */
export function readStackFile(stack: string, layerDir = ".", project = PROJECT): StackValues {
  const file = parse(
    readFileSync(path.join(STACK_FIXTURES, layerDir, `Pulumi.${stack}.yaml`), "utf8"),
  ) as {
    config: Record<string, unknown>;
  };
  return Object.fromEntries(
    Object.entries(file.config)
      .filter(([key]) => key.startsWith(`${project}:`))
      .map(([key, value]) => [key.slice(project.length + 1), value]),
  );
}

/** Options of one mocked run. */
export interface RunOptions {
  readonly stack?: string;
  /** The Pulumi project (config namespace). @default "talos-platform" */
  readonly project?: string;
  /** A preview (dry run) instead of an update. */
  readonly preview?: boolean;
  /** Config keys to pass as secrets, e.g. { proxmoxApiToken: "..." }. */
  readonly secrets?: Record<string, string>;
  readonly recorder?: Recorder;
  /** The run is expected to log runtime errors (a failing invoke); otherwise any logged error fails it. */
  readonly expectErrors?: boolean;
  /** The program to run, e.g. the compiled `dist/index.js`. @default components/foundation's */
  readonly program?: () => unknown;
}

/** How many errors the Pulumi runtime has logged so far in this process. */
function runtimeErrorCount(): number {
  // The runtime's error counter is internal (not in the type declarations), hence the plain require.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require("@pulumi/pulumi/runtime/state").getStore().logErrorCount as number;
}

/** Sets up fresh mocks and config for one run of a program. */
export async function setupRun(values: StackValues, options: RunOptions = {}): Promise<Recorder> {
  const recorder = options.recorder ?? new Recorder();
  const project = options.project ?? PROJECT;
  recorder.install();
  await pulumi.runtime.setMocks(
    recorder.mocks,
    project,
    options.stack ?? "test",
    options.preview ?? false,
    // What the engine reports on a DIY backend (the program's StackReference to itself names it).
    "organization",
  );
  const config: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    config[`${project}:${key}`] = typeof value === "string" ? value : JSON.stringify(value);
  }
  const secrets = options.secrets ?? {};
  for (const [key, value] of Object.entries(secrets)) config[`${project}:${key}`] = value;
  pulumi.runtime.setAllConfig(
    config,
    Object.keys(secrets).map((k) => `${project}:${k}`),
  );
  return recorder;
}

/** Resolves every Output in a (possibly nested) result object. */
export async function resolveAll(value: unknown): Promise<any> {
  if (pulumi.Output.isInstance(value)) return resolveAll(await unwrap(value));
  if (Array.isArray(value)) return Promise.all(value.map(resolveAll));
  if (value !== null && typeof value === "object") {
    const entries = await Promise.all(
      Object.entries(value).map(async ([k, v]) => [k, await resolveAll(v)] as const),
    );
    return Object.fromEntries(entries);
  }
  return value;
}

/** Runs the foundation program once and waits until every registration has finished. */
export async function runFoundation(values: StackValues, options: RunOptions = {}) {
  const recorder = await setupRun(values, options);
  const errorsBefore = runtimeErrorCount();
  // Under a real engine an unhandled rejection fails the program; here it is counted as an error.
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on("unhandledRejection", onRejection);
  try {
    const { foundation } = await import("../components/foundation");
    // Another build of the same program registers the same and returns the same outputs.
    const outputs = options.program
      ? ((await options.program()) as Awaited<ReturnType<typeof foundation>>)
      : await foundation();
    const resolved =
      options.preview || options.expectErrors ? undefined : await resolveAll(outputs);
    await recorder.settled();
    const runtimeErrors = runtimeErrorCount() - errorsBefore + rejections.length;
    if (runtimeErrors > 0 && !options.expectErrors) {
      throw new Error(
        `the program failed with ${runtimeErrors} runtime error(s): ${rejections.map(String).join("; ")}`,
      );
    }
    return { recorder, outputs, resolved, runtimeErrors, rejections };
  } finally {
    process.off("unhandledRejection", onRejection);
  }
}
