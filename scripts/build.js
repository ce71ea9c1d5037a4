// Compiles the TypeScript sources that changed since they were last compiled, so the CLI and
// `pulumi up` run JavaScript compiled from the sources as they are now and never load a compiler
// otherwise. Each file is transpiled on its own (what `ts-node --transpile-only` does at every
// start); type errors are `npm run typecheck`'s job, a syntax error stops the build.
//
// Never stale: each output gets its source's modification time, so a source is stale exactly when
// the two differ (an edit, a checkout, or an edit during the compile itself). A change to the
// compiler, its options or this script recompiles everything. Outputs are written to a temporary
// file and renamed, and the output of a source is a function of the source alone, so two processes
// building at once need no lock: the last rename wins with the same content.
//
// Plain CommonJS: this is what runs before anything is compiled.
//   node scripts/build.js           build what is stale (`npm run build`)
//   node scripts/build.js --check   exit 1 and say so when stale; build nothing
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const DIST = path.join(ROOT, "dist");
/** What the programs and the CLI run; the local Talos SDK compiles into its own package folder. */
const SOURCES = ["index.ts", "app", "bootstrap", "components", "automation", "sdks/talos"];
const SDK = "sdks/talos/";
/** Inputs that change every output: the compiler, its options, this script. */
const SETTINGS = ["tsconfig.json", "node_modules/typescript/package.json", "scripts/build.js"];
const SETTINGS_STAMP = path.join(DIST, ".settings.json");

/** A problem that stops the run; its message says what to do. */
class BuildError extends Error {}

/** Every `.ts` source under `relative` (a file or a folder), relative to the repository. */
function collect(relative) {
  const full = path.join(ROOT, relative);
  if (!fs.existsSync(full)) return [];
  if (!fs.statSync(full).isDirectory()) return [relative];
  return fs
    .readdirSync(full, { recursive: true })
    .map((file) => `${relative}/${file.split(path.sep).join("/")}`)
    .filter((file) => /(?<!\.d)\.ts$/.test(file) && !/\/(node_modules|dist)\//.test(file));
}

/** Where a source's JavaScript goes, relative to the repository. */
function outputOf(source) {
  const js = source.replace(/\.ts$/, ".js");
  return js.startsWith(SDK) ? `${SDK}dist/${js.slice(SDK.length)}` : `dist/${js}`;
}

/** A file's modification time in whole milliseconds (what a utimes round trip keeps); 0 when missing. */
const mtimeOf = (file) =>
  Math.round(fs.statSync(path.join(ROOT, file), { throwIfNoEntry: false })?.mtimeMs ?? 0);
const readOr = (file, fallback) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : fallback);
const settingsNow = () => JSON.stringify(SETTINGS.map((file) => [file, mtimeOf(file)]));

/** What is stale: the sources to compile, and outputs whose source is gone. */
function plan() {
  const sources = SOURCES.flatMap((source) => collect(source));
  const settingsChanged = readOr(SETTINGS_STAMP, "") !== settingsNow();
  const changed = sources.filter((s) => settingsChanged || mtimeOf(s) !== mtimeOf(outputOf(s)));
  const expected = new Set(sources.map(outputOf));
  const orphans = [DIST, path.join(ROOT, SDK, "dist")]
    .flatMap((dir) =>
      (fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }) : []).map((f) =>
        path.relative(ROOT, path.join(dir, f)),
      ),
    )
    .filter((file) => file.endsWith(".js") && !expected.has(file));
  return { changed, orphans };
}

function writeAtomically(file, content) {
  writing(file, () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, content);
    fs.renameSync(temp, file);
  });
}

/**
 * Runs a write of the build's output; a filesystem error (a read-only checkout, a full disk) stops
 * the run with the file and what to do instead of a stack trace: the output is stale, so running
 * it is no option.
 */
function writing(file, write) {
  try {
    return write();
  } catch (error) {
    if (typeof error?.code !== "string" || error.path === undefined) throw error;
    throw new BuildError(
      `build: could not write ${path.relative(ROOT, file)} (${error.code}); a source changed since the last build, ` +
        "and the compiled output must follow it before anything runs. Make the checkout writable (for a read-only " +
        "one, run `npm run build` before making it read-only) or restore the changed sources, then rerun",
    );
  }
}

function loadCompiler() {
  try {
    return require(require.resolve("typescript", { paths: [ROOT] }));
  } catch {
    throw new BuildError(
      "build: the TypeScript compiler is not installed. Run `npm ci`, then rerun",
    );
  }
}

/** Transpiles `files`, each output stamped with its source's time; throws listing every syntax error. */
function compile(files) {
  const ts = loadCompiler();
  const { config } = ts.readConfigFile(path.join(ROOT, "tsconfig.json"), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config?.compilerOptions ?? {}, ROOT);
  const compilerOptions = { ...options, noEmit: false, sourceMap: true, outDir: undefined };
  process.stderr.write(`build: compiling ${files.length} TypeScript files…\n`);
  const errors = [];
  for (const file of files) {
    const source = path.join(ROOT, file);
    const output = path.join(ROOT, outputOf(file));
    // Read the time first: an edit during the compile leaves the output stale, as it is.
    const time = new Date(mtimeOf(file));
    const result = ts.transpileModule(fs.readFileSync(source, "utf8"), {
      compilerOptions,
      fileName: source,
      reportDiagnostics: true,
    });
    for (const d of result.diagnostics ?? []) {
      const at =
        d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
      const where = at ? `:${at.line + 1}:${at.character + 1}` : "";
      errors.push(`  ${file}${where}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`);
    }
    if (errors.length > 0) continue;
    const map = {
      ...JSON.parse(result.sourceMapText),
      sources: [path.relative(path.dirname(output), source)],
    };
    writeAtomically(`${output}.map`, JSON.stringify(map));
    writeAtomically(output, result.outputText);
    writing(output, () => fs.utimesSync(output, time, time));
  }
  if (errors.length > 0) {
    throw new BuildError(
      `build: syntax errors in the TypeScript sources:\n${errors.join("\n")}\nFix them, then rerun`,
    );
  }
}

/** Compiles what is stale and removes outputs whose source is gone. */
function ensureBuilt() {
  const { changed, orphans } = plan();
  for (const file of orphans) {
    for (const output of [file, `${file}.map`]) {
      writing(output, () => fs.rmSync(path.join(ROOT, output), { force: true }));
    }
  }
  if (changed.length === 0) return;
  compile(changed);
  writeAtomically(SETTINGS_STAMP, settingsNow());
}

/** Caches V8's compiled code of the large SDKs between runs (NODE_COMPILE_CACHE wins). */
function enableCompileCache() {
  require("node:module").enableCompileCache?.(
    process.env.NODE_COMPILE_CACHE ??
      path.join(ROOT, "node_modules", ".cache", "node-compile-cache"),
  );
}

/** Loads a compiled module of the repository (`index`, `app/index`), building first when stale. */
function load(entry) {
  ensureBuilt();
  enableCompileCache();
  return require(path.join(DIST, entry));
}

module.exports = { BuildError, SOURCES, enableCompileCache, ensureBuilt, load, plan };

if (require.main === module) {
  try {
    if (process.argv.includes("--check")) {
      const { changed, orphans } = plan();
      if (changed.length + orphans.length > 0) {
        process.stderr.write(
          `build: stale: ${[...changed, ...orphans].slice(0, 5).join(", ")}. Run \`npm run build\`\n`,
        );
        process.exitCode = 1;
      }
    } else {
      ensureBuilt();
    }
  } catch (error) {
    process.stderr.write(`${error instanceof BuildError ? error.message : error.stack}\n`);
    process.exitCode = 1;
  }
}
