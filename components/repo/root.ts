// Where the repository is, whether this code runs from its TypeScript sources (tests, ts-node) or
// compiled into dist/ (the CLI, `pulumi up`): the nearest folder above this file with a package.json
// (dist/ has none), so paths to files that are not compiled (app/policies, stack files) hold in both.
import * as fs from "node:fs";
import * as path from "node:path";

/** The nearest folder at or above `from` that holds a package.json. */
function findRepoRoot(from: string): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) {
      throw new Error(`no package.json above ${from}: is this file inside the repository?`);
    }
  }
}

/** The repository root. */
export const REPO_ROOT = findRepoRoot(__dirname);
