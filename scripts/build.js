// Compiles the TypeScript sources to JavaScript when they changed since the last build, so the CLI
// and `pulumi up` always run code compiled from the sources as they are now, and never load a
// TypeScript compiler otherwise. Output: dist/<path>.js, and sdks/talos/dist/ for the local Talos
// SDK (its package.json `main`).
//
// Each file is transpiled on its own (TypeScript's transpileModule, what `ts-node --transpile-only`
// does at every start), only the files that changed: a first build takes a second or two, a rebuild
// after an edit a fraction of that. Type errors are `npm run typecheck`'s job (part of `npm test`,
// strict, with isolatedModules so that per-file output is exact); a syntax error stops the build.
//
// Freshness: dist/.build-stamp.json holds, per source file, its content hash and its inode, size,
// mtime and ctime. When every one of those still matches, the build is fresh (a few milliseconds to
// check); any difference has the file's content hashed again, so only a real change compiles. ctime
// cannot be set back, so content changed behind a restored mtime is still seen.
//
// Plain CommonJS on purpose: this is what runs before anything is compiled.
//   node scripts/build.js           build what is stale (`npm run build`)
//   node scripts/build.js --check   exit 1 and say so when stale; build nothing
//   node scripts/build.js --force   compile every file again
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const DIST = path.join(ROOT, "dist");
const STAMP = path.join(DIST, ".build-stamp.json");
const LOCK = path.join(DIST, ".build.lock");

/**
 * Folders and files whose `.ts` sources are compiled: the programs, the CLI, the SDK, and what
 * `npm run bench` runs compiled (the benchmark and the mock engine it uses).
 */
const SOURCES = [
  "index.ts",
  "app",
  "bootstrap",
  "components",
  "automation",
  "sdks/talos",
  "bench",
  "test/harness.ts",
  "test/mocks.ts",
];
/** The local SDK is compiled into its own package folder. */
const SDK = "sdks/talos/";
/** Inputs besides the sources: the compiler options and the compiler itself. */
const SETTINGS = ["tsconfig.json", "node_modules/typescript/package.json", "scripts/build.js"];
/** Never sources: build output and dependencies. */
const SKIP = new Set(["node_modules", "dist"]);
/** How long a process waits for a build another process is running. */
const LOCK_WAIT_MS = 10 * 60_000;
/** Bumped when the stamp's layout changes. */
const STAMP_VERSION = 1;

/** A problem that stops the run; its message says what to do. */
class BuildError extends Error {
  constructor(message) {
    super(message);
    this.name = "BuildError";
  }
}

function collect(relative, files) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(ROOT, relative), { withFileTypes: true });
  } catch (error) {
    if (error.code === "ENOTDIR") files.push(relative);
    else if (error.code !== "ENOENT") throw error;
    return;
  }
  for (const entry of entries) {
    if (SKIP.has(entry.name)) continue;
    const child = `${relative}/${entry.name}`;
    if (entry.isDirectory()) collect(child, files);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(child);
  }
}

/** Every source file, relative to the repository, sorted. */
function sourceFiles() {
  const files = [];
  for (const source of SOURCES) collect(source, files);
  return files.sort();
}

/** Where a source's JavaScript goes, relative to the repository. */
function outputOf(source) {
  const js = source.replace(/\.ts$/, ".js");
  return js.startsWith(SDK) ? `${SDK}dist/${js.slice(SDK.length)}` : `dist/${js}`;
}

/** The identity of a file's current version without reading it; undefined when missing. */
function statKey(file) {
  try {
    const s = fs.statSync(path.join(ROOT, file), { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (error) {
    if (error.code === "ENOENT") return undefined;
    throw error;
  }
}

function contentHash(file) {
  try {
    // Loaded here: a fresh build, the usual case, hashes nothing (node:crypto takes a few ms to load).
    return require("node:crypto")
      .createHash("sha256")
      .update(fs.readFileSync(path.join(ROOT, file)))
      .digest("hex");
  } catch (error) {
    if (error.code === "ENOENT") return "(missing)";
    throw error;
  }
}

function readStamp() {
  try {
    const stamp = JSON.parse(fs.readFileSync(STAMP, "utf8"));
    return stamp.version === STAMP_VERSION ? stamp : undefined;
  } catch {
    return undefined;
  }
}

function writeStamp(stamp) {
  fs.mkdirSync(DIST, { recursive: true });
  const temp = `${STAMP}.${process.pid}`;
  fs.writeFileSync(temp, `${JSON.stringify(stamp, null, 1)}\n`);
  fs.renameSync(temp, STAMP);
}

/**
 * What is stale: `settings` when the compiler or its options changed (everything recompiles),
 * `changed` the sources whose content differs from the last build (or that are new, or whose output
 * is missing), `removed` the sources that no longer exist. `stamp` is the current state to record.
 */
function plan() {
  const previous = readStamp();
  const entries = {};
  const observe = (file, before) => {
    const stat = statKey(file);
    const sha = before && before.stat === stat ? before.sha : contentHash(file);
    entries[file] = { sha, stat };
    return !before || before.sha !== sha;
  };
  let settings = !previous;
  for (const file of SETTINGS) {
    if (observe(file, previous && previous.settings[file])) settings = true;
  }
  const settingsEntries = { ...entries };
  const sources = sourceFiles();
  const changed = [];
  const sourceEntries = {};
  for (const file of sources) {
    const before = previous && previous.sources[file];
    const differs = observe(file, before);
    sourceEntries[file] = entries[file];
    if (settings || differs || !fs.existsSync(path.join(ROOT, outputOf(file)))) changed.push(file);
  }
  const removed = previous ? Object.keys(previous.sources).filter((f) => !sourceEntries[f]) : [];
  const stamp = { version: STAMP_VERSION, settings: settingsEntries, sources: sourceEntries };
  const restat =
    !previous ||
    Object.entries({ ...settingsEntries, ...sourceEntries }).some(
      ([file, entry]) => (previous.settings[file] ?? previous.sources[file])?.stat !== entry.stat,
    );
  return { settings, changed, removed, stamp, restat };
}

/** Whether the compiled output is that of the sources as they are now. */
function isFresh() {
  const { changed, removed } = plan();
  return changed.length === 0 && removed.length === 0;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** Runs `fn` holding dist/.build.lock: two processes never compile at once. */
function withLock(fn) {
  fs.mkdirSync(DIST, { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      fs.writeFileSync(LOCK, String(process.pid), { flag: "wx" });
      break;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      let holder = Number.NaN;
      try {
        holder = Number.parseInt(fs.readFileSync(LOCK, "utf8"), 10);
      } catch {
        // removed meanwhile: try again
      }
      if (!Number.isInteger(holder) || !isAlive(holder)) {
        // Left by a build that was killed (or not yet written): take it over.
        fs.rmSync(LOCK, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new BuildError(
          `build: another build (process ${holder}) has held dist/.build.lock for ${LOCK_WAIT_MS / 60_000} minutes; got no lock. Stop that process or remove the file, then rerun`,
        );
      }
      sleep(100);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(LOCK, { force: true });
  }
}

function loadCompiler() {
  try {
    return require(require.resolve("typescript", { paths: [ROOT] }));
  } catch {
    throw new BuildError(
      "build: the TypeScript compiler is not installed; got no node_modules/typescript. Run `npm ci` in the repository, then rerun",
    );
  }
}

/** tsconfig.json's compiler options, as the emit needs them. */
function compilerOptions(ts) {
  const file = path.join(ROOT, "tsconfig.json");
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
  if (error) {
    throw new BuildError(
      `build: tsconfig.json could not be read; got ${JSON.stringify(ts.flattenDiagnosticMessageText(error.messageText, " "))}. Fix it, then rerun`,
    );
  }
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions ?? {}, ROOT);
  return {
    ...options,
    noEmit: false,
    declaration: false,
    sourceMap: true,
    inlineSourceMap: false,
    outDir: undefined,
    rootDir: undefined,
  };
}

/** Transpiles `files`; throws a BuildError listing every syntax error. */
function compile(files, reason) {
  const ts = loadCompiler();
  const options = compilerOptions(ts);
  process.stderr.write(`build: compiling ${files.length} TypeScript files (${reason})…\n`);
  const started = Date.now();
  const errors = [];
  for (const file of files) {
    const source = path.join(ROOT, file);
    const output = path.join(ROOT, outputOf(file));
    const result = ts.transpileModule(fs.readFileSync(source, "utf8"), {
      compilerOptions: options,
      fileName: source,
      reportDiagnostics: true,
    });
    for (const diagnostic of result.diagnostics ?? []) {
      const where =
        diagnostic.file && diagnostic.start !== undefined
          ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
          : undefined;
      errors.push(
        `  ${file}${where ? `:${where.line + 1}:${where.character + 1}` : ""}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`,
      );
    }
    const map = JSON.parse(result.sourceMapText);
    map.sources = [path.relative(path.dirname(output), source)];
    map.file = path.basename(output);
    fs.mkdirSync(path.dirname(output), { recursive: true });
    fs.writeFileSync(output, result.outputText);
    fs.writeFileSync(`${output}.map`, JSON.stringify(map));
  }
  if (errors.length > 0) {
    throw new BuildError(
      `build: ${errors.length} syntax error(s) in the TypeScript sources; got:\n${errors.join("\n")}\nFix them, then rerun`,
    );
  }
  process.stderr.write(`build: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

/**
 * Makes sure the compiled output is fresh, compiling what is stale. Safe to call from several
 * processes at once: one compiles, the others wait and then find it fresh.
 */
function ensureBuilt(options = {}) {
  let current = plan();
  if (!options.force && current.changed.length === 0 && current.removed.length === 0) {
    // Only the stat identities moved (a checkout, a touch): remember the new ones, compile nothing.
    if (current.restat) writeStamp(current.stamp);
    return;
  }
  withLock(() => {
    // Another process may have built while this one waited for the lock.
    current = plan();
    const files = options.force ? Object.keys(current.stamp.sources) : current.changed;
    if (files.length === 0 && current.removed.length === 0) return;
    for (const file of current.removed) {
      for (const output of [outputOf(file), `${outputOf(file)}.map`]) {
        fs.rmSync(path.join(ROOT, output), { force: true });
      }
    }
    if (files.length > 0) {
      const reason = options.force
        ? "--force"
        : !readStamp()
          ? "first build"
          : current.settings
            ? "the compiler or its options changed"
            : "changed since the last build";
      compile(files, reason);
    }
    // The state from before compiling: a file edited meanwhile makes the next run compile it again.
    writeStamp(current.stamp);
  });
}

/**
 * Caches V8's compiled code of every module loaded from here on (Node's module compile cache), in
 * node_modules/.cache/: the Pulumi SDKs are large, and a warm start loads them markedly faster.
 * NODE_COMPILE_CACHE, when set, wins; a cache that cannot be written is simply not used.
 */
function enableCompileCache() {
  const nodeModule = require("node:module");
  if (typeof nodeModule.enableCompileCache === "function") {
    nodeModule.enableCompileCache(
      process.env.NODE_COMPILE_CACHE ??
        path.join(ROOT, "node_modules", ".cache", "node-compile-cache"),
    );
  }
}

/**
 * Loads a compiled module of the repository (`index`, `app/index`), building first when the sources
 * changed.
 */
function load(entry) {
  ensureBuilt();
  enableCompileCache();
  return require(path.join(DIST, entry));
}

module.exports = {
  BuildError,
  DIST,
  ROOT,
  SOURCES,
  enableCompileCache,
  ensureBuilt,
  isFresh,
  load,
  outputOf,
  plan,
};

if (require.main === module) {
  try {
    if (process.argv.includes("--check")) {
      const { changed, removed } = plan();
      if (changed.length > 0 || removed.length > 0) {
        process.stderr.write(
          `build: the compiled output is stale; got ${changed.length + removed.length} changed file(s) (${[...changed, ...removed].slice(0, 5).join(", ")}${changed.length + removed.length > 5 ? ", …" : ""}). Run \`npm run build\`\n`,
        );
        process.exitCode = 1;
      }
    } else {
      ensureBuilt({ force: process.argv.includes("--force") });
    }
  } catch (error) {
    process.stderr.write(`${error instanceof BuildError ? error.message : error.stack}\n`);
    process.exitCode = 1;
  }
}
