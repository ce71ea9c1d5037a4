// The import graph of components/ and automation/: no file imports a file that imports it back
// (directly or around a loop, type-only imports included), the folders of components/ import each
// other in one direction, and only the CLI's entry points sit above automation/commands/.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";

const ROOT = path.resolve(__dirname, "..");
const COMPONENTS = path.join(ROOT, "components");
const AUTOMATION = path.join(ROOT, "automation");

/** Every .ts file under `dir` (declaration files aside). */
function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(file);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [file] : [];
  });
}

/** The files a file imports by relative path: imports, re-exports, import() and require, type-only too. */
function relativeImports(file: string, known: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((spec) => spec.startsWith("."))
    .flatMap((spec) => {
      const target = path.resolve(path.dirname(file), spec);
      const candidate = [`${target}.ts`, path.join(target, "index.ts")].find((f) => known.has(f));
      return candidate ? [candidate] : [];
    });
}

/** The import graph of every file under the given folders: file → the files it imports. */
function importGraph(dirs: readonly string[]): Map<string, string[]> {
  const files = dirs.flatMap(tsFiles);
  const known = new Set(files);
  return new Map(files.map((file) => [file, relativeImports(file, known)]));
}

/** The strongly connected parts of a graph with more than one node, or a node importing itself. */
function cycles<T>(graph: ReadonlyMap<T, readonly T[]>): T[][] {
  // Tarjan's algorithm.
  const index = new Map<T, number>();
  const low = new Map<T, number>();
  const stack: T[] = [];
  const onStack = new Set<T>();
  const found: T[][] = [];
  const visit = (node: T) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const part: T[] = [];
      let member: T;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        part.push(member);
      } while (member !== node);
      if (part.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(part);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** One loop through a cycle's members, `a → b → a`, for the message. */
function loopOf<T>(
  part: readonly T[],
  graph: ReadonlyMap<T, readonly T[]>,
  name: (n: T) => string,
) {
  const members = new Set(part);
  const start = part[0];
  const route = [start];
  const seen = new Set([start]);
  for (let at = start; ;) {
    const next = (graph.get(at) ?? []).filter((n) => members.has(n));
    const back = next.find((n) => n === start);
    if (back !== undefined && route.length > 1) break;
    const step = next.find((n) => !seen.has(n)) ?? next[0];
    if (step === start) break;
    route.push(step);
    seen.add(step);
    at = step;
  }
  return [...route, start].map(name).join(" → ");
}

const relative = (file: string) => path.relative(ROOT, file).split(path.sep).join("/");

/** The folder of components/ a file belongs to: `components/config`, or `components` for a root file. */
const folderOf = (file: string) => {
  const [first, ...rest] = path.relative(COMPONENTS, file).split(path.sep);
  return rest.length === 0 ? "components" : `components/${first}`;
};

describe("layering", () => {
  const graph = importGraph([COMPONENTS, AUTOMATION]);
  const byName = new Map([...graph].map(([file, imports]) => [relative(file), imports]));

  it("reads the imports it checks, type-only ones included (the scan is not empty)", () => {
    assert.ok(graph.size > 100, `${graph.size} files`);
    // `import type { ConfigDocument } from "../talos/patches"`.
    assert.ok(
      byName
        .get("components/flux/handoff.ts")!
        .includes(path.join(COMPONENTS, "talos", "patches.ts")),
    );
    // `./rules`, a folder's index.
    assert.ok(
      byName
        .get("components/config/validate.ts")!
        .includes(path.join(COMPONENTS, "config", "rules", "index.ts")),
    );
  });

  it("has no file that imports a file importing it back, around any loop", () => {
    assert.deepEqual(
      cycles(graph).map((part) => loopOf(part, graph, relative)),
      [],
      "import cycles",
    );
  });

  it("has the folders of components/ import each other one way only, the root above them all", () => {
    const folders = new Map<string, Set<string>>();
    const intoRoot: string[] = [];
    for (const [file, imports] of graph) {
      if (!file.startsWith(COMPONENTS + path.sep)) continue;
      const from = folderOf(file);
      for (const target of imports) {
        if (!target.startsWith(COMPONENTS + path.sep)) continue;
        const to = folderOf(target);
        if (to === from) continue;
        if (to === "components") intoRoot.push(`${relative(file)} imports ${relative(target)}`);
        folders.set(from, (folders.get(from) ?? new Set()).add(to));
      }
    }
    const folderGraph = new Map([...folders].map(([from, to]) => [from, [...to]]));
    assert.deepEqual(
      cycles(folderGraph).map((part) => loopOf(part, folderGraph, (folder) => folder)),
      [],
      "folder cycles",
    );
    assert.deepEqual(intoRoot, [], "files below components/ importing a root file");
  });

  it("has no module below automation/commands/ import from it (only the CLI's entry points)", () => {
    const commands = path.join(AUTOMATION, "commands");
    const above = new Set(["cli.ts", "main.ts"].map((f) => path.join(AUTOMATION, f)));
    const offenders = [...graph]
      .filter(([file]) => file.startsWith(AUTOMATION + path.sep))
      .filter(([file]) => !file.startsWith(commands + path.sep) && !above.has(file))
      .flatMap(([file, imports]) =>
        imports
          .filter((target) => target.startsWith(commands + path.sep))
          .map((target) => `${relative(file)} imports ${relative(target)}`),
      );
    assert.deepEqual(offenders, []);
  });
});
