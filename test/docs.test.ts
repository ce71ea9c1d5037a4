// What the README and the docs promise a new user, checked: the first screen's commands exist,
// the files it names exist, and every table fits a terminal.
import { strict as assert } from "node:assert";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import * as path from "node:path";
import { buildProgram } from "../automation/cli";
import { ROOT } from "./harness";
import { makeRepo, testContext, cleanupRepos } from "./automation/helpers";

const README = readFileSync(path.join(ROOT, "README.md"), "utf8");

function markdownFiles(): string[] {
  const docs = path.join(ROOT, "docs");
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? walk(path.join(dir, entry.name))
        : entry.name.endsWith(".md")
          ? [path.join(dir, entry.name)]
          : [],
    );
  return [path.join(ROOT, "README.md"), path.join(ROOT, "examples", "README.md"), ...walk(docs)];
}

describe("the README and the docs", () => {
  afterEach(cleanupRepos);

  it("the README's first screen uses commands the CLI has and files the repository has", () => {
    const program = buildProgram(testContext({ repoRoot: makeRepo() }), () => undefined);
    const commands = new Set(program.commands.map((c) => c.name()));
    const used = [...README.matchAll(/npm run platform -- ([a-z-]+)/g)].map((m) => m[1]);
    assert.ok(used.includes("validate") && used.includes("preview") && used.includes("up"));
    for (const command of used) assert.ok(commands.has(command), command);
    for (const [, file] of README.matchAll(/\b((?:examples|docs)\/[\w./-]+\.(?:md|yaml))/g)) {
      assert.ok(existsSync(path.join(ROOT, file)), file);
    }
    assert.match(README, /Node\.js 22/);
    assert.equal(readFileSync(path.join(ROOT, ".nvmrc"), "utf8").trim(), "22");
  });

  it("names the provider plugins a first preview installs, at the versions the packages pin", () => {
    const cli = readFileSync(path.join(ROOT, "docs", "cli.md"), "utf8");
    const section = cli.slice(cli.indexOf("\n## Provider plugins\n"));
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    let count = 0;
    for (const [name, version] of Object.entries(manifest.dependencies)) {
      const folder = path.join(ROOT, "node_modules", name);
      const pkg = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as {
        version: string;
        pulumi?: { resource?: boolean; name?: string; version?: string };
      };
      if (pkg.pulumi?.resource !== true) continue;
      count++;
      const pluginVersion = (pkg.pulumi.version ?? pkg.version).replace(/^v/, "");
      const plugin = `\`${pkg.pulumi.name}\` v${pluginVersion}`;
      assert.ok(section.includes(plugin), `${name} (${version}): ${plugin}`);
    }
    assert.ok(count >= 7, "every provider package of package.json");
    assert.ok(section.length > 0 && cli.indexOf("\n## Provider plugins\n") > 0, "its own heading");
    assert.match(README, /pulumi-resource-talos` v0\.8\.1/);
    assert.match(README, /docs\/cli\.md#provider-plugins/);
  });

  it("says exactly what npm test runs", () => {
    const scripts = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts;
    const development = readFileSync(path.join(ROOT, "docs", "development.md"), "utf8");
    const steps = (scripts.test as string).split(" && ");
    for (const step of steps) assert.ok(development.includes(`\`${step}\``), step);
    for (const name of ["typecheck", "lint", "test:unit"]) {
      for (const part of (scripts[name] as string).split(" && ")) {
        assert.ok(development.includes(`\`${part}\``), `${name}: ${part}`);
      }
    }
  });

  it("has no table wider than a terminal (100 characters)", () => {
    for (const file of markdownFiles()) {
      const wide = readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.startsWith("|") && line.length > 100);
      assert.deepEqual(wide, [], path.relative(ROOT, file));
    }
  });
});
