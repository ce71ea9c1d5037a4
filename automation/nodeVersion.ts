// The CLI's first import: on a Node.js older than the project needs, one line and exit code 5 (a
// tool missing or too old), before any dependency loads and fails less clearly. The twin of
// scripts/check-node.js, which `npm test` and `npm run platform` run first; a test keeps the two
// (and .nvmrc, and package.json's engines) in step.

/** The Node.js major version the project needs (.nvmrc). */
export const REQUIRED_NODE_MAJOR = 22;

/** The one line to print for a Node.js version, or undefined when it is new enough. */
export function nodeVersionProblem(version: string): string | undefined {
  if (parseInt(version, 10) >= REQUIRED_NODE_MAJOR) return undefined;
  return (
    `talos-platform needs Node.js ${REQUIRED_NODE_MAJOR} or newer; this is Node.js ${version}. ` +
    `Switch with \`nvm use\` (it reads .nvmrc) or install Node.js ${REQUIRED_NODE_MAJOR} (https://nodejs.org), ` +
    "then run `npm ci`."
  );
}

const problem = nodeVersionProblem(process.versions.node);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(5);
}
