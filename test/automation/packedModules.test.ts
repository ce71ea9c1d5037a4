// Packs (automation/packedModules.ts): modules loaded from one file are the modules themselves, in
// Node.js's module cache, each loaded once; a changed module is never run from an old pack; what a
// pack cannot reproduce loads the usual way; the code cache is made once and then kept.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { loadPack } from "../../automation/packedModules";
import { ROOT } from "./helpers";

/** A small CommonJS package: an entry, two modules, one module a pack cannot hold, a JSON file. */
function writePackage(root: string): void {
  const files: Record<string, string> = {
    "index.js": [
      '"use strict";',
      'const path = require("node:path");',
      'const shared = require("./common.cjs");',
      'const user = require("./lib/user.js");',
      'const dynamic = require("./dynamic.js");',
      'const data = require("./data.json");',
      "exports.where = path.basename(__dirname);",
      "exports.shared = shared;",
      "exports.user = user;",
      "exports.dynamic = dynamic;",
      "exports.data = data;",
      // A mention of require( in a comment line is not a require:
      '// require("./nothing")',
    ].join("\n"),
    "common.cjs": [
      '"use strict";',
      "globalThis.__packTestLoads = (globalThis.__packTestLoads ?? 0) + 1;",
      "exports.file = __filename;",
      "exports.version = 1;",
    ].join("\n"),
    "lib/user.js": [
      'const shared = require("../common.cjs");',
      // Sloppy mode stays sloppy: the module keeps its own mode inside the pack.
      "exports.sloppy = (function () { return this === undefined; })() === false;",
      "exports.shared = shared;",
    ].join("\n"),
    // require.resolve: not something a pack reproduces, so this one loads from its own file.
    "dynamic.js": 'exports.resolved = require.resolve("./common.cjs");',
    "data.json": '{ "answer": 42 }',
  };
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
}

describe("packs of CommonJS modules", () => {
  let root: string;
  let packs: string;
  let entry: string;
  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "platform-pack-")));
    packs = path.join(root, "packs");
    writePackage(path.join(root, "pkg"));
    entry = path.join(root, "pkg", "index.js");
    (globalThis as { __packTestLoads?: number }).__packTestLoads = 0;
  });
  afterEach(() => {
    for (const file of Object.keys(require.cache)) {
      if (file.startsWith(root + path.sep)) delete require.cache[file];
    }
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("registers each module under its own file, loaded once, as require would load it", () => {
    loadPack("pkg", entry, path.join(root, "pkg"), packs);
    const shared = path.join(root, "pkg", "common.cjs");
    assert.ok(require.cache[entry]?.loaded);
    assert.ok(require.cache[shared]?.loaded);
    // What the rest of the process gets: the very same instances.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const index = require(entry) as Record<string, Record<string, unknown>>;
    assert.equal(index, require.cache[entry]!.exports);
    assert.equal(index.where, "pkg");
    assert.equal(index.shared.file, shared);
    assert.equal(index.user.shared, index.shared);
    assert.equal(index.user.sloppy, true);
    assert.deepEqual(index.data, { answer: 42 });
    assert.equal(index.dynamic.resolved, shared);
    assert.equal((globalThis as { __packTestLoads?: number }).__packTestLoads, 1);
    // The pack holds the modules it can reproduce, not dynamic.js (nor the JSON file).
    const manifest = JSON.parse(fs.readFileSync(path.join(packs, "pkg.json"), "utf8")) as {
      files: Record<string, string>;
    };
    assert.deepEqual(
      Object.keys(manifest.files).sort(),
      [entry, path.join(root, "pkg", "lib", "user.js"), shared].sort(),
    );
  });

  it("keeps a module the process already loaded instead of loading it again", () => {
    const shared = path.join(root, "pkg", "common.cjs");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const first = require(shared) as unknown;
    loadPack("pkg", entry, path.join(root, "pkg"), packs);
    assert.equal((require.cache[entry]!.exports as { shared: unknown }).shared, first);
    assert.equal((globalThis as { __packTestLoads?: number }).__packTestLoads, 1);
  });

  it("packs again when a module changed, and never runs the old one", () => {
    loadPack("pkg", entry, path.join(root, "pkg"), packs);
    const before = JSON.parse(fs.readFileSync(path.join(packs, "pkg.json"), "utf8")) as {
      id: string;
    };
    for (const file of Object.keys(require.cache)) {
      if (file.startsWith(root + path.sep)) delete require.cache[file];
    }
    const shared = path.join(root, "pkg", "common.cjs");
    // Same size, same mtime: only the content (and with it the ctime) differs.
    const stat = fs.statSync(shared);
    fs.writeFileSync(shared, fs.readFileSync(shared, "utf8").replace("version = 1", "version = 2"));
    fs.utimesSync(shared, stat.atime, stat.mtime);
    loadPack("pkg", entry, path.join(root, "pkg"), packs);
    const after = JSON.parse(fs.readFileSync(path.join(packs, "pkg.json"), "utf8")) as {
      id: string;
    };
    assert.notEqual(after.id, before.id);
    assert.equal((require.cache[shared]!.exports as { version: number }).version, 2);
    // The old pack is gone.
    assert.deepEqual(
      fs.readdirSync(packs).filter((file) => file.includes(before.id)),
      [],
    );
  });

  it("loads nothing itself when the entry cannot be packed; the modules then load as usual", () => {
    const dynamic = path.join(root, "pkg", "dynamic.js");
    loadPack("dynamic", dynamic, path.join(root, "pkg"), packs);
    assert.equal(require.cache[dynamic], undefined);
    assert.equal(fs.existsSync(path.join(packs, "dynamic.json")), false);
  });

  it("makes the code cache at the exit of the first process and keeps it in the next ones", () => {
    const script = [
      `const { loadPack } = require(${JSON.stringify(path.join(ROOT, "dist", "automation", "packedModules.js"))});`,
      `loadPack("pkg", ${JSON.stringify(entry)}, ${JSON.stringify(path.join(root, "pkg"))}, ${JSON.stringify(packs)});`,
      `process.stdout.write(JSON.stringify(require(${JSON.stringify(entry)}).data));`,
    ].join("\n");
    const built = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(built.status, 0, built.stderr);
    const run = () => {
      const result = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
      assert.equal(result.status, 0, result.stderr);
      assert.equal(result.stdout, '{"answer":42}');
      return fs.readdirSync(packs).find((file) => file.endsWith(".cache"));
    };
    const cacheFile = run();
    assert.ok(cacheFile, "no code cache after the first run");
    const made = fs.statSync(path.join(packs, cacheFile)).mtimeMs;
    assert.equal(run(), cacheFile);
    assert.equal(fs.statSync(path.join(packs, cacheFile)).mtimeMs, made);
    // One the V8 of this process cannot use is made again.
    fs.writeFileSync(path.join(packs, cacheFile), "not a code cache");
    assert.equal(run(), cacheFile);
    assert.notEqual(fs.readFileSync(path.join(packs, cacheFile), "utf8"), "not a code cache");
  });

  it("uses no pack with PLATFORM_DEBUG set (stack traces then name the modules' own files)", () => {
    const saved = process.env.PLATFORM_DEBUG;
    process.env.PLATFORM_DEBUG = "1";
    try {
      loadPack("pkg", entry, path.join(root, "pkg"), packs);
    } finally {
      if (saved === undefined) delete process.env.PLATFORM_DEBUG;
      else process.env.PLATFORM_DEBUG = saved;
    }
    assert.equal(require.cache[entry], undefined);
    assert.equal(fs.existsSync(packs), false);
  });
});

describe("validate from packs", function () {
  this.timeout(120_000);
  it("bin/platform validate reports exactly what it reports without packs", () => {
    const built = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(built.status, 0, built.stderr);
    const base: NodeJS.ProcessEnv = { ...process.env, HOME: os.tmpdir() };
    delete base.PLATFORM_DEBUG;
    const validate = (env: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, [path.join(ROOT, "bin", "platform"), "validate"], {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...base, ...env },
      });
    // Packed (or packed again) on the first run, then run from the packs and their code cache.
    const runs = [validate(), validate()];
    const unpacked = validate({ PLATFORM_DEBUG: "1" });
    assert.match(unpacked.stdout, /^validate: \d+ of \d+ stacks? ready/m);
    for (const run of runs) {
      assert.equal(run.status, unpacked.status, run.stderr);
      assert.equal(run.stdout, unpacked.stdout);
      assert.equal(run.stderr, unpacked.stderr);
    }
    const packs = fs.readdirSync(path.join(ROOT, "node_modules", ".cache", "packs"));
    for (const name of ["zod", "yaml", "validate"]) {
      assert.ok(packs.includes(`${name}.json`), `no ${name} pack in ${packs.join(", ")}`);
    }
  });
});
