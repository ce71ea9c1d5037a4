import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { ROOT } from "../automation/helpers";

/** The relative imports of a TypeScript file, as written. */
function relativeImports(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/\bfrom\s+"(\.[^"]*)"/g)].map((match) => match[1]);
}

/** Every .ts file under a folder. */
function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory()
        ? tsFiles(path.join(dir, entry.name))
        : entry.name.endsWith(".ts")
          ? [path.join(dir, entry.name)]
          : [],
    );
}

describe("layering of the automation modules", () => {
  const automation = path.join(ROOT, "automation");
  const commands = path.join(automation, "commands");
  // Only the CLI's entry points sit above the commands.
  const above = new Set(["cli.ts", "index.ts", "main.ts"].map((f) => path.join(automation, f)));

  it("no module below automation/commands/ imports from it (day-two modules included)", () => {
    const offenders: string[] = [];
    for (const file of tsFiles(automation)) {
      if (file.startsWith(commands + path.sep) || above.has(file)) continue;
      for (const spec of relativeImports(file)) {
        const target = path.resolve(path.dirname(file), spec);
        if (target === commands || target.startsWith(commands + path.sep)) {
          offenders.push(`${path.relative(ROOT, file)} imports ${spec}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  it("finds the day-two modules it checks (the scan is not empty)", () => {
    const dayTwo = tsFiles(path.join(automation, "dayTwo"));
    assert.ok(
      dayTwo.some((f) => f.endsWith("cluster.ts")) && dayTwo.some((f) => f.endsWith("lock.ts")),
    );
    assert.ok(
      relativeImports(path.join(automation, "dayTwo", "cluster.ts")).includes("../stackOutputs"),
    );
  });
});
