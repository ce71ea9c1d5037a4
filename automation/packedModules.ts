// Loading many CommonJS modules from one file: `validate` needs about 240 (zod 95, yaml 72, the CLI's
// and the config checks' compiled modules), and Node.js pays for every module it resolves, reads and
// wraps, and compiles each function again in every process. A one-shot command pays that at each
// start, so `validate` loads them from packs (automation/cli.ts).
//
// A pack holds the modules reachable from an entry file within a folder (a package, or dist/), byte
// for byte, each wrapped in the function Node.js wraps a CommonJS module in, with their requires
// resolved at pack time; nothing is transformed. Loading it registers each module in Node.js's own
// module cache (require.cache) under its real file name, running its body when first required, as
// Node.js does: a later `require("zod")` anywhere in the process gets the very same instance.
// Next to the pack, V8's code cache of it, made at the exit of the first run that loads it, holds
// every function that run compiled (Node.js's compile cache holds only what is compiled before a
// module runs: its body, not the functions it defines).
//
// Robust by construction:
// - built on demand into node_modules/.cache/packs/ (gone with `npm ci`); a pack file is never
//   rewritten (each has its own id), and its manifest, written last, names the one to use;
// - fresh only while every packed file has the inode, size, mtime and ctime it had when packed (and
//   the entry is the same file); anything else packs again, so a rebuilt dist/ or a reinstalled
//   package is never run from an old pack;
// - the code cache belongs to one pack file (its id); V8 rejects one made by another V8 or with other
//   flags, and it is then made again;
// - a module that does anything beyond static `require("…")` calls (require.resolve, dynamic
//   requires, import(), module properties) is left out of the pack and loads the usual way, and a
//   module this process already loaded is used as it is: no module is ever loaded twice;
// - any failure leaves the modules to load the usual way; PLATFORM_DEBUG=1 uses no packs (stack
//   traces then name the modules' own files).
import * as fs from "node:fs";
import Module from "node:module";
import * as path from "node:path";
import * as vm from "node:vm";
import { REPO_ROOT } from "../components/repo/root";

/** Bumped when the pack's layout changes: older packs are then packed again. */
const PACK_VERSION = 4;

/** Where packs live: with the other caches of installed code (Node.js's compile cache). */
export const PACK_DIR = path.join(REPO_ROOT, "node_modules", ".cache", "packs");

/** What the pack holds and how to tell it is still the installed package. */
interface Manifest {
  readonly version: number;
  /** Names the pack file, `<name>.<id>.js`, and its code cache, `<name>.<id>.js.cache`. */
  readonly id: string;
  readonly entry: string;
  /** Each packed file and its stat identity when packed. */
  readonly files: Readonly<Record<string, string>>;
}

/** The pack's function: registers the modules in the module cache, returns the entry's exports. */
type Install = (
  module: typeof Module,
  cache: NodeJS.Dict<NodeJS.Module>,
  require: NodeJS.Require,
) => unknown;

/** A string-literal require call; group 2 is the specifier. */
const STATIC_REQUIRE = /\brequire\((["'])([^"'\\]+)\1\)/y;
/** What a pack cannot reproduce: any other use of require, import(), module's other properties. */
const UNPACKABLE = /(?<![.\w$])(require\b|import\(|module\.(?!exports\b))/g;

/** Whether `index` is on a line comment's line (`// …`, or ` * …` inside a block comment). */
function inComment(source: string, index: number): boolean {
  const line = source.slice(source.lastIndexOf("\n", index) + 1, index);
  return /^\s*(\/\/|\/\*|\*)/.test(line);
}

/**
 * The specifiers of the module's `require("…")` calls; undefined when it uses require any other
 * way, import(), or module properties besides exports (outside comment lines).
 */
function staticRequires(source: string): string[] | undefined {
  const specifiers: string[] = [];
  for (const match of source.matchAll(UNPACKABLE)) {
    if (inComment(source, match.index)) continue;
    if (match[1] !== "require") return undefined;
    STATIC_REQUIRE.lastIndex = match.index;
    const literal = STATIC_REQUIRE.exec(source);
    if (!literal) return undefined;
    specifiers.push(literal[2]);
  }
  return specifiers;
}

function statKey(file: string): string | undefined {
  try {
    const s = fs.statSync(file, { bigint: true });
    // ctime too: it cannot be set back, so content changed behind a restored mtime is still seen.
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/** A module of a pack: its source and the packed files its requires resolve to. */
interface Packed {
  readonly source: string;
  /** The file's stat identity from before it was read. */
  readonly stat: string;
  readonly deps: Record<string, string>;
}

/**
 * The graph of CommonJS modules reachable from `entry` within `scope` (a folder): each packable
 * module's source and the packed modules its requires resolve to. A module outside the scope, or
 * one a pack cannot reproduce, is left out and loads the usual way when required; undefined when
 * that is the entry itself.
 */
function moduleGraph(entry: string, scope: string): Map<string, Packed> | undefined {
  const found = new Map<
    string,
    { source: string; stat: string; requires: [string, string][] } | null
  >();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (found.has(file)) continue;
    // Stat first: a file changed while it is read makes the next run pack again.
    const stat = statKey(file);
    const source = /\.c?js$/.test(file) ? fs.readFileSync(file, "utf8") : undefined;
    const specifiers = source === undefined ? undefined : staticRequires(source);
    if (stat === undefined || source === undefined || specifiers === undefined) {
      found.set(file, null);
      continue;
    }
    const resolveFrom = Module.createRequire(file);
    const requires: [string, string][] = [];
    for (const specifier of specifiers) {
      if (Module.isBuiltin(specifier)) continue;
      const resolved = resolveFrom.resolve(specifier);
      if (!resolved.startsWith(scope + path.sep)) continue;
      requires.push([specifier, resolved]);
      pending.push(resolved);
    }
    found.set(file, { source, stat, requires });
  }
  if (!found.get(entry)) return undefined;
  const graph = new Map<string, Packed>();
  for (const [file, module] of found) {
    if (!module) continue;
    const deps = Object.fromEntries(module.requires.filter(([, target]) => found.get(target)));
    graph.set(file, { source: module.source, stat: module.stat, deps });
  }
  return graph;
}

/**
 * The pack's JavaScript: one function expression that registers every module of `graph` in the
 * module cache and returns the entry's exports. Each module's own text is wrapped in the function
 * Node.js wraps a CommonJS module in; no "use strict" outside, so each module keeps its own mode.
 */
function packSource(entry: string, graph: Map<string, Packed>): string {
  const parts = [
    "(function install(Module, cache, require) {",
    "// Generated by automation/packedModules.ts from the installed package; do not edit.",
    "const __packBodies = {};",
    "const __packDeps = {};",
  ];
  for (const [file, { source, deps }] of graph) {
    const key = JSON.stringify(file);
    parts.push(`__packDeps[${key}] = ${JSON.stringify(deps)};`);
    parts.push(
      `__packBodies[${key}] = function (exports, require, module, __filename, __dirname) {\n${source}\n};`,
    );
  }
  parts.push(
    "const path = require('node:path');",
    "function load(file, parent) {",
    "  const cached = cache[file];",
    "  if (cached) return cached.exports;",
    "  const module = new Module(file, parent);",
    "  module.filename = file;",
    "  module.paths = Module._nodeModulePaths(path.dirname(file));",
    "  cache[file] = module;",
    "  const own = __packDeps[file];",
    "  const local = (specifier) =>",
    "    own[specifier] !== undefined ? load(own[specifier], module) : module.require(specifier);",
    "  try {",
    "    __packBodies[file].call(module.exports, module.exports, local, module, file, path.dirname(file));",
    "  } catch (error) {",
    "    delete cache[file];",
    "    throw error;",
    "  }",
    "  module.loaded = true;",
    "  return module.exports;",
    "}",
    `return load(${JSON.stringify(entry)}, null);`,
    "})",
    "",
  );
  return parts.join("\n");
}

function readManifest(file: string): Manifest | undefined {
  try {
    const manifest = JSON.parse(fs.readFileSync(file, "utf8")) as Manifest;
    return manifest.version === PACK_VERSION ? manifest : undefined;
  } catch {
    return undefined;
  }
}

function writeAtomically(file: string, data: string | Uint8Array): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, data);
  fs.renameSync(temp, file);
}

const packFileOf = (dir: string, name: string, id: string) => path.join(dir, `${name}.${id}.js`);

/** Packs `name` again; undefined when it cannot be packed (it then loads the usual way). */
function pack(dir: string, name: string, entry: string, scope: string): Manifest | undefined {
  // First: where packs cannot be written (a read-only install), nothing is read for one.
  fs.mkdirSync(dir, { recursive: true });
  fs.accessSync(dir, fs.constants.W_OK);
  const graph = moduleGraph(entry, scope);
  if (!graph) return undefined;
  const manifest: Manifest = {
    version: PACK_VERSION,
    id: `${Date.now().toString(36)}-${process.pid}`,
    entry,
    files: Object.fromEntries([...graph].map(([file, { stat }]) => [file, stat])),
  };
  writeAtomically(packFileOf(dir, name, manifest.id), packSource(entry, graph));
  // The manifest last: a pack is only used once its manifest names it.
  writeAtomically(path.join(dir, `${name}.json`), JSON.stringify(manifest));
  // Earlier packs of the package and their caches (a process still about to read one then loads
  // the modules the usual way).
  for (const file of fs.readdirSync(dir)) {
    if (file.startsWith(`${name}.`) && !file.startsWith(`${name}.${manifest.id}.`)) {
      if (file !== `${name}.json`) fs.rmSync(path.join(dir, file), { force: true });
    }
  }
  return manifest;
}

/** A fresh pack of `name`, packed now when there is none; undefined when it cannot be packed. */
function freshPack(dir: string, name: string, entry: string, scope: string): Manifest | undefined {
  const manifest = readManifest(path.join(dir, `${name}.json`));
  const fresh =
    manifest !== undefined &&
    manifest.entry === entry &&
    fs.existsSync(packFileOf(dir, name, manifest.id)) &&
    Object.entries(manifest.files).every(([file, key]) => statKey(file) === key);
  return fresh ? manifest : pack(dir, name, entry, scope);
}

/** Runs the pack, with its code cache when there is a usable one; makes the cache otherwise. */
function install(
  dir: string,
  name: string,
  manifest: Manifest,
  cache: NodeJS.Dict<NodeJS.Module>,
): void {
  const file = packFileOf(dir, name, manifest.id);
  const cacheFile = `${file}.cache`;
  let cachedData: Buffer | undefined;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    // none yet
  }
  const script = new vm.Script(fs.readFileSync(file, "utf8"), { filename: file, cachedData });
  if (cachedData === undefined || script.cachedDataRejected) {
    // At exit: the cache then holds every function this run compiled, not only the module bodies.
    process.once("exit", () => {
      try {
        writeAtomically(cacheFile, script.createCachedData());
      } catch {
        // not writable: the next run compiles again
      }
    });
  }
  (script.runInThisContext() as Install)(Module, cache, require);
}

/**
 * Loads the modules reachable from `entry` (a file) within `scope` (a folder) from the pack `name`,
 * packing them first when there is no fresh pack: the entry's module and all it requires are then in
 * the module cache. A module this process already loaded is kept (never loaded twice); one the pack
 * leaves out loads the usual way when required. Never throws: a pack is only an optimization, and
 * whatever it did not load loads the usual way. `dir`: where packs are kept.
 */
export function loadPack(name: string, entry: string, scope: string, dir = PACK_DIR): void {
  const cache = require.cache;
  try {
    // PLATFORM_DEBUG: stack traces of the files themselves.
    if (process.env.PLATFORM_DEBUG || cache[entry]) return;
    const manifest = freshPack(dir, name, entry, scope);
    if (manifest) install(dir, name, manifest, cache);
  } catch {
    // loads the usual way
  }
}

/** Loads each package (resolved from the repository, as `require` does) from its pack. */
export function loadPackedPackages(names: readonly string[]): void {
  for (const name of names) {
    let entry: string;
    try {
      entry = require.resolve(name, { paths: [REPO_ROOT] });
    } catch {
      continue;
    }
    loadPack(name, entry, path.dirname(entry));
  }
}
