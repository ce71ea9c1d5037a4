// The compiled programs and CLI: scripts/build.js compiles what changed and nothing else, never lets
// stale output run, and the projects' entries (Pulumi.yaml `main`, the CLI's bin, the SDK's `main`)
// run that output without ts-node.
import { strict as assert } from "node:assert";
import { type SpawnSyncReturns, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { ROOT, readStackFile, runFoundation, STACK_SECRETS } from "./harness";

/** A throwaway repository with the real build scripts and a tiny program. */
function tinyRepo(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-build-"));
  const write = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), content);
  };
  for (const file of ["scripts/build.js", "scripts/program.js", "program.js", "tsconfig.json"]) {
    write(file, fs.readFileSync(path.join(ROOT, file), "utf8"));
  }
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
  write("package.json", "{}\n");
  write(
    "components/greet.ts",
    "export const greeting = (name: string): string => `hello ${name}`;\n",
  );
  write(
    "index.ts",
    'import { greeting } from "./components/greet";\nexport = async () => ({ message: greeting("pulumi") });\n',
  );
  write("sdks/talos/index.ts", 'export const sdk: string = "compiled";\n');
  return dir;
}

function build(repo: string, ...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [path.join(repo, "scripts", "build.js"), ...args], {
    encoding: "utf8",
  });
}

/** Loads the repository's program.js the way the Pulumi language host does, in a plain node. */
function runProgram(repo: string): SpawnSyncReturns<string> {
  const script = `
    const exported = require(${JSON.stringify(path.join(repo, "program.js"))});
    Promise.resolve(exported()).then((outputs) => {
      const compilers = Object.keys(require.cache).filter((f) => /[\\\\/](typescript|ts-node)[\\\\/]/.test(f));
      console.log(JSON.stringify({ outputs, compilers }));
    });`;
  return spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
}

describe("the build (scripts/build.js)", () => {
  let repo: string;
  beforeEach(() => {
    repo = tinyRepo();
  });
  afterEach(() => fs.rmSync(repo, { recursive: true, force: true }));

  it("compiles every source on the first run, the SDK into its own package folder", () => {
    const first = build(repo);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, /compiling 3 TypeScript files/);
    for (const output of [
      "dist/index.js",
      "dist/components/greet.js",
      "sdks/talos/dist/index.js",
    ]) {
      assert.ok(fs.existsSync(path.join(repo, output)), `${output} missing`);
    }
  });

  it("runs the program from the compiled output without loading a TypeScript compiler", () => {
    const run = runProgram(repo);
    assert.equal(run.status, 0, run.stderr);
    const result = JSON.parse(run.stdout.trim().split("\n").pop()!);
    assert.deepEqual(result.outputs, { message: "hello pulumi" });
    // The first run built (TypeScript loaded in the build only); a fresh one loads none at all.
    const again = JSON.parse(runProgram(repo).stdout.trim().split("\n").pop()!);
    assert.deepEqual(again.compilers, []);
  });

  it("compiles nothing when fresh", () => {
    assert.equal(build(repo).status, 0);
    const fresh = build(repo);
    assert.equal(fresh.status, 0);
    assert.equal(fresh.stderr, "");
    assert.equal(build(repo, "--check").status, 0);
  });

  it("compiles exactly the changed file, and the program runs the new code", () => {
    assert.equal(build(repo).status, 0);
    const file = path.join(repo, "components", "greet.ts");
    fs.writeFileSync(file, "export const greeting = (name: string): string => `hi ${name}`;\n");
    assert.equal(build(repo, "--check").status, 1);
    const rebuilt = build(repo);
    assert.match(rebuilt.stderr, /compiling 1 TypeScript files/);
    assert.deepEqual(JSON.parse(runProgram(repo).stdout.trim()).outputs, { message: "hi pulumi" });
  });

  it("sees a source whose modification time went back (a checkout of an older file)", () => {
    assert.equal(build(repo).status, 0);
    const file = path.join(repo, "components", "greet.ts");
    fs.writeFileSync(file, "export const greeting = (name: string): string => `yo ${name}`;\n");
    const earlier = new Date(Date.now() - 3_600_000);
    fs.utimesSync(file, earlier, earlier);
    assert.equal(build(repo, "--check").status, 1);
    assert.deepEqual(JSON.parse(runProgram(repo).stdout.trim().split("\n").pop()!).outputs, {
      message: "yo pulumi",
    });
  });

  it("recompiles everything when the compiler's options change", () => {
    assert.equal(build(repo).status, 0);
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(repo, "tsconfig.json"), later, later);
    assert.match(build(repo).stderr, /compiling 3 TypeScript files/);
  });

  it("removes the output of a deleted source", () => {
    assert.equal(build(repo).status, 0);
    fs.writeFileSync(path.join(repo, "components", "old.ts"), "export const old = 1;\n");
    assert.equal(build(repo).status, 0);
    assert.ok(fs.existsSync(path.join(repo, "dist", "components", "old.js")));
    fs.rmSync(path.join(repo, "components", "old.ts"));
    assert.equal(build(repo).status, 0);
    assert.equal(fs.existsSync(path.join(repo, "dist", "components", "old.js")), false);
  });

  it("never runs stale output: a syntax error stops the build and the program with its position", () => {
    assert.equal(build(repo).status, 0);
    fs.writeFileSync(path.join(repo, "components", "greet.ts"), "export const greeting = (;\n");
    const failed = build(repo);
    assert.equal(failed.status, 1);
    assert.match(
      failed.stderr,
      /syntax errors in the TypeScript sources:\n {2}components\/greet\.ts:1:/,
    );
    assert.equal(build(repo, "--check").status, 1, "the failed build must not count as fresh");
    const program = runProgram(repo);
    // 32: pulumi-language-nodejs takes the message as already shown to the user.
    assert.equal(program.status, 32);
    assert.match(program.stderr, /components\/greet\.ts:1:/);
  });

  it("a source changed in a checkout that cannot hold the output: one message naming the file, no stack trace", () => {
    assert.equal(build(repo).status, 0);
    fs.writeFileSync(
      path.join(repo, "components", "greet.ts"),
      "export const greeting = (name: string): string => `hi ${name}`;\n",
    );
    // (Tests run as root, who may write anywhere: a folder where the output goes stands in for
    // a read-only file system.)
    fs.rmSync(path.join(repo, "dist", "components", "greet.js"));
    fs.mkdirSync(path.join(repo, "dist", "components", "greet.js"));
    // A time of its own: the folder just made may share the edit's clock tick.
    const edited = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(repo, "components", "greet.ts"), edited, edited);
    const failed = build(repo);
    assert.equal(failed.status, 1);
    assert.match(
      failed.stderr,
      /^build: could not write dist\/components\/greet\.js \(E[A-Z]+\); a source changed since the last build.*Make the checkout writable/m,
    );
    assert.doesNotMatch(failed.stderr, /\n\s+at /, "no stack trace");
  });

  it("says what to run when the compiler is not installed", () => {
    fs.rmSync(path.join(repo, "node_modules"));
    const result = build(repo);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /the TypeScript compiler is not installed\. Run `npm ci`/);
  });

  it("two processes building at once both succeed, and the output is the sources'", async () => {
    const run = () =>
      new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [path.join(repo, "scripts", "build.js")]);
        child.on("close", resolve);
      });
    assert.deepEqual(await Promise.all([run(), run()]), [0, 0]);
    assert.equal(build(repo, "--check").status, 0);
    assert.deepEqual(JSON.parse(runProgram(repo).stdout.trim().split("\n").pop()!).outputs, {
      message: "hello pulumi",
    });
  });
});

describe("the projects run the compiled program", () => {
  for (const [dir, entry] of [
    [".", "index"],
    ["app", "app/index"],
    ["bootstrap", "bootstrap/index"],
  ] as const) {
    it(`${dir}/Pulumi.yaml runs ${dir}/program.js (the compiled ${entry}.ts) with typescript off`, () => {
      const project = parse(fs.readFileSync(path.join(ROOT, dir, "Pulumi.yaml"), "utf8"));
      assert.equal(project.main, "program.js");
      assert.deepEqual(project.runtime, { name: "nodejs", options: { typescript: false } });
      const program = fs.readFileSync(path.join(ROOT, dir, "program.js"), "utf8");
      assert.match(program, new RegExp(`\\.entry\\("${entry}"\\)`));
    });
  }

  it("the CLI is a bin run directly, and `npm run platform` execs it (after the Node.js check)", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    assert.deepEqual(pkg.bin, { platform: "bin/platform" });
    // exec as the script's last command: no shell stays between npm and the CLI.
    assert.equal(pkg.scripts.platform, "node scripts/check-node.js && exec ./bin/platform");
    assert.ok((fs.statSync(path.join(ROOT, "bin", "platform")).mode & 0o111) !== 0);
  });

  it("the local Talos SDK loads compiled by default and from source only when asked", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "sdks/talos/package.json"), "utf8"));
    assert.equal(pkg.main, "dist/index.js");
    assert.deepEqual(pkg.exports["."], {
      types: "./index.ts",
      source: "./index.ts",
      default: "./dist/index.js",
    });
  });

  it("the compiled foundation program registers what the TypeScript one does", async function () {
    this.timeout(120_000);
    const built = spawnSync(process.execPath, [path.join(ROOT, "scripts", "build.js")], {
      encoding: "utf8",
    });
    assert.equal(built.status, 0, built.stderr);
    const values = readStackFile("staging");
    const urns = async (program?: () => unknown) => {
      const { recorder } = await runFoundation(values, {
        stack: "staging",
        secrets: STACK_SECRETS,
        ...(program ? { program } : {}),
      });
      return recorder.resources.map((r) => r.urn).sort();
    };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const compiled = require(path.join(ROOT, "dist", "index.js")) as () => unknown;
    assert.deepEqual(await urns(compiled), await urns());
  });
});

describe("CI runs the CLI so that a cancel reaches it", () => {
  it("the step that changes things execs it: the runner signals the step's first process only", () => {
    const workflow = fs.readFileSync(path.join(ROOT, ".github", "workflows", "main.yml"), "utf8");
    const steps = parse(workflow).jobs.deploy.steps as { run?: string }[];
    const up = steps.filter((step) => /platform -- up /.test(step.run ?? ""));
    assert.ok(up.length > 0);
    for (const step of up) assert.match(step.run!.trim(), /^exec npm run --silent platform -- up /);
  });
});
