// The layers of the platform and their environments. A layer is a Pulumi project folder; its
// environments are the stacks that have a `Pulumi.<env>.yaml` there, so `pulumi up` in that folder
// and this CLI act on the same program and the same stack files.
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { ExitCode, UserError } from "./errors";
import { DEFAULT_LAYER, LAYER_NAMES, type LayerName } from "./layerNames";

export * from "./layerNames";

/** Each layer's folder, relative to the repository root. */
const LAYER_FOLDERS: Record<LayerName, string> = {
  bootstrap: "bootstrap",
  foundation: ".",
  app: "app",
};

/** A layer whose folder holds a Pulumi project. */
export interface Layer {
  readonly name: LayerName;
  /** Absolute path of the project folder. */
  readonly dir: string;
  /** The folder as the operator knows it: `.`, `bootstrap/`, `app/`. */
  readonly displayDir: string;
  /** The project's `name:` in Pulumi.yaml (the namespace of its config keys). */
  readonly project: string;
  /** Pulumi.yaml's `backend.url`, when the project names one. */
  readonly projectBackendUrl?: string;
}

/** The folder a layer lives in, as shown to the operator. */
export function layerDisplayDir(name: LayerName): string {
  const folder = LAYER_FOLDERS[name];
  return folder === "." ? "." : `${folder}/`;
}

/** Where a layer's Pulumi.yaml is expected, relative to the repository root. */
export function layerProjectFile(name: LayerName): string {
  return path.join(LAYER_FOLDERS[name], "Pulumi.yaml");
}

/** Whether the layer's folder has a Pulumi.yaml yet. */
export function layerExists(repoRoot: string, name: LayerName): boolean {
  return fs.existsSync(path.join(repoRoot, layerProjectFile(name)));
}

/** Reads a layer's project; a folder without Pulumi.yaml is a clear error naming the folder. */
export function resolveLayer(repoRoot: string, name: LayerName): Layer {
  const dir = path.resolve(repoRoot, LAYER_FOLDERS[name]);
  const projectFile = path.join(dir, "Pulumi.yaml");
  if (!fs.existsSync(projectFile)) {
    throw new UserError({
      what: `layer ${name}`,
      problem: `its folder ${layerDisplayDir(name)} has no Pulumi.yaml`,
      got: JSON.stringify(projectFile),
      fix: `Create the ${name} project there first (another issue adds it), or use --layer ${DEFAULT_LAYER}`,
    });
  }
  const project = readYamlMapping(projectFile);
  if (typeof project.name !== "string" || project.name === "") {
    throw new UserError({
      what: projectFile,
      problem: "the project has no name",
      got: JSON.stringify(project.name ?? null),
      fix: "Add `name: <project>` to Pulumi.yaml",
    });
  }
  const backend = project.backend as { url?: unknown } | undefined;
  return {
    name,
    dir,
    displayDir: layerDisplayDir(name),
    project: project.name,
    ...(typeof backend?.url === "string" && backend.url !== ""
      ? { projectBackendUrl: backend.url }
      : {}),
  };
}

const STACK_FILE = /^Pulumi\.(.+)\.yaml$/;
const MISNAMED_STACK_FILE = /^Pulumi\.(.+)\.yml$/;

/** The layer's environments: the `<env>` of every `Pulumi.<env>.yaml` in its folder, sorted. */
export function listEnvironments(layer: Layer): string[] {
  return fs
    .readdirSync(layer.dir)
    .map((file) => STACK_FILE.exec(file)?.[1])
    .filter((env): env is string => env !== undefined)
    .sort();
}

/**
 * Stack files named `Pulumi.<env>.yml`: Pulumi reads a stack's settings from the file with its
 * project file's extension (`Pulumi.yaml` → `Pulumi.<env>.yaml`; sdk/go/common/workspace/paths.go,
 * ProjectStackPath), so it would ignore these. The CLI refuses them rather than act on one file while
 * the engine reads another.
 */
export function misnamedStackFiles(layer: Layer): string[] {
  return fs
    .readdirSync(layer.dir)
    .filter((file) => MISNAMED_STACK_FILE.test(file))
    .sort();
}

/**
 * A stack file's name given where a stack name belongs (`Pulumi.dev.yaml`, `./app/Pulumi.dev.yml`):
 * its stack name and extension.
 */
export function stackFileArgument(
  argument: string,
): { readonly env: string; readonly extension: "yaml" | "yml" } | undefined {
  const match = /^(?:.*[\\/])?Pulumi\.(.+)\.(yaml|yml)$/.exec(argument);
  return match ? { env: match[1], extension: match[2] as "yaml" | "yml" } : undefined;
}

/** The error for a `Pulumi.<env>.yml` the engine would ignore. */
export function misnamedStackFileError(layer: Layer, file: string): UserError {
  const env = MISNAMED_STACK_FILE.exec(file)?.[1] ?? "<env>";
  return new UserError({
    what: `${layer.displayDir === "." ? "" : layer.displayDir}${file}`,
    problem:
      "Pulumi ignores stack files named .yml: it reads Pulumi.<env>.yaml, after the project's Pulumi.yaml",
    got: JSON.stringify(file),
    fix: `Rename it to Pulumi.${env}.yaml (merge it into that file if both exist)`,
  });
}

/**
 * Checks that `env` is one of the layer's environments; otherwise lists the known ones. A
 * `Pulumi.<env>.yml` is refused with the rename to make.
 */
export function requireEnvironment(layer: Layer, env: string): void {
  const misnamed = `Pulumi.${env}.yml`;
  if (misnamedStackFiles(layer).includes(misnamed)) throw misnamedStackFileError(layer, misnamed);
  const known = listEnvironments(layer);
  if (known.includes(env)) return;
  const file = stackFileArgument(env);
  if (file) {
    throw new UserError({
      what: "environment",
      problem: "must be the stack name, not its stack file",
      got: JSON.stringify(env),
      fix: `Pass ${file.env}, the <env> of Pulumi.<env>.yaml${file.extension === "yml" ? `, and rename the file to Pulumi.${file.env}.yaml (Pulumi reads only .yaml)` : ""}`,
    });
  }
  throw new UserError({
    what: "environment",
    problem: `no stack file Pulumi.${env}.yaml in the ${layer.name} layer (${layer.displayDir})`,
    got: JSON.stringify(env),
    fix:
      known.length > 0
        ? `Use one of: ${known.join(", ")}`
        : `The layer has no stack files yet; add Pulumi.${env}.yaml to ${layer.displayDir}`,
  });
}

/** What the CLI reads from a stack file: its config and Pulumi's own top-level settings. */
export interface StackFile {
  readonly path: string;
  /** `config:` as written, keys fully qualified (`talos-platform:cluster`). */
  readonly config: Readonly<Record<string, unknown>>;
  /** Pulumi's top-level `secretsprovider:` key, when present. */
  readonly secretsProvider?: string;
  /** Pulumi's top-level `encryptedkey:` (the data key a KMS secrets provider wrapped), when present. */
  readonly encryptedKey?: string;
}

/** Reads `Pulumi.<env>.yaml` of a layer. */
export function readStackFile(layer: Layer, env: string): StackFile {
  const file = path.join(layer.dir, `Pulumi.${env}.yaml`);
  const content = readYamlMapping(file);
  const config = content.config;
  const secretsProvider = content.secretsprovider;
  const encryptedKey = content.encryptedkey;
  return {
    path: file,
    config:
      config !== null && typeof config === "object" ? (config as Record<string, unknown>) : {},
    ...(typeof secretsProvider === "string" && secretsProvider !== "" ? { secretsProvider } : {}),
    ...(typeof encryptedKey === "string" && encryptedKey !== "" ? { encryptedKey } : {}),
  };
}

/**
 * The largest stack file read: real ones are a few kilobytes, and YAML parsing a huge one (a file
 * written by mistake) would run Node.js out of memory after a minute instead of saying so.
 */
export const MAX_STACK_FILE_BYTES = 1024 * 1024;

/** A stack file's text, refused when it is not a regular file, unreadable or too large. */
function readStackFileText(file: string): string {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    throw unreadable(file, error);
  }
  if (!stat.isFile()) {
    throw new UserError({
      what: file,
      problem: "must be a regular file",
      got: stat.isDirectory() ? "a folder" : "another kind of file",
      fix: "Replace it with the file itself",
    });
  }
  if (stat.size > MAX_STACK_FILE_BYTES) {
    throw new UserError({
      what: file,
      problem: `is too large for a stack file (at most ${MAX_STACK_FILE_BYTES / 1024 / 1024} MiB)`,
      got: `${stat.size} bytes`,
      fix: "Restore the file (git checkout -- <file>)",
    });
  }
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    throw unreadable(file, error);
  }
}

function unreadable(file: string, error: unknown): UserError {
  return new UserError({
    what: file,
    problem: "could not be read",
    got: (error as NodeJS.ErrnoException).code ?? JSON.stringify(String(error)),
    fix: "Make it readable by your user",
  });
}

function readYamlMapping(file: string): Record<string, unknown> {
  const text = readStackFileText(file);
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    throw new UserError({
      what: file,
      problem: "could not be read as YAML",
      got: JSON.stringify((error as Error).message.split("\n")[0]),
      fix: "Fix the file's syntax",
    });
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new UserError({
      what: file,
      problem: "is not a YAML mapping",
      got: JSON.stringify(typeof parsed),
      fix: "Write the file as `key: value` pairs",
    });
  }
  return parsed as Record<string, unknown>;
}

/**
 * The layers a command acts on: the one named, or for `all` every layer that has a Pulumi.yaml,
 * in bring-up order (reversed for destroy, so the app goes before the cluster it runs on).
 */
export function selectLayers(
  repoRoot: string,
  choice: LayerName | "all",
  order: "up" | "down" = "up",
): LayerName[] {
  if (choice !== "all") return [choice];
  const existing = LAYER_NAMES.filter((name) => layerExists(repoRoot, name));
  if (existing.length === 0) {
    throw new UserError(
      {
        what: "--layer all",
        problem: "no layer folder has a Pulumi.yaml",
        got: JSON.stringify(repoRoot),
        fix: "Run the command from the repository",
      },
      ExitCode.usage,
    );
  }
  return order === "up" ? existing : [...existing].reverse();
}
