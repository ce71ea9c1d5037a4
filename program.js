// The foundation program as Pulumi runs it (Pulumi.yaml `main`): the compiled index.ts, built first
// when the sources changed, so `pulumi up` here and the CLI run the same, current program.
"use strict";
module.exports = require("./scripts/program").entry("index");
