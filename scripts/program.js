// What each project's program.js (its Pulumi.yaml `main`) calls: build when stale, then hand the
// compiled program to the Pulumi language host. A build that fails prints one message and exits
// with 32, the code the Node.js language host reads as "the user was already told what went wrong".
"use strict";
const build = require("./build");

/** Exit code of a program that printed an actionable message (pulumi-language-nodejs). */
const SHOWN_TO_USER = 32;

/** The exports of the compiled `entry` (`index`, `app/index`), built first when stale. */
function entry(name) {
  try {
    return build.load(name);
  } catch (error) {
    if (!(error instanceof build.BuildError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(SHOWN_TO_USER);
  }
}

module.exports = { entry };
