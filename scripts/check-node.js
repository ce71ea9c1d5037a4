// Stops with one line when Node.js is older than the project needs (.nvmrc), before anything else
// fails less clearly (on Node 20, `npm ci` refuses to install and `npm test` then says only
// `tsc: not found`). `npm test` and `npm run platform` run it first. No dependencies and old syntax
// on purpose: it must run on the Node.js it turns away. automation/nodeVersion.ts is its twin for
// the CLI's own entry point; a test keeps the two in step.
"use strict";
var fs = require("fs");
var path = require("path");

var REQUIRED = parseInt(fs.readFileSync(path.join(__dirname, "..", ".nvmrc"), "utf8"), 10);

/** The one line to print for a Node.js version, or undefined when it is new enough. */
function nodeVersionProblem(version) {
  if (parseInt(version, 10) >= REQUIRED) return undefined;
  return (
    "talos-platform needs Node.js " +
    REQUIRED +
    " or newer; this is Node.js " +
    version +
    ". " +
    "Switch with `nvm use` (it reads .nvmrc) or install Node.js " +
    REQUIRED +
    " (https://nodejs.org), " +
    "then run `npm ci`."
  );
}

module.exports = { REQUIRED: REQUIRED, nodeVersionProblem: nodeVersionProblem };

if (require.main === module) {
  var problem = nodeVersionProblem(process.versions.node);
  if (problem) {
    process.stderr.write(problem + "\n");
    process.exit(1);
  }
}
