// The bootstrap program as Pulumi runs it (Pulumi.yaml `main`): the compiled bootstrap/index.ts,
// built first when the sources changed, so `pulumi up` here and the CLI run the same, current program.
"use strict";
module.exports = require("../scripts/program").entry("bootstrap/index");
