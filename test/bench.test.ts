// The benchmark's generated stacks stay valid as the checks grow (a bench that stops at validation
// measures nothing). The figures themselves are printed by `npm run bench`, never asserted.
import { strict as assert } from "node:assert";
import { generateStack } from "../bench/generate";
import { validatePlatformConfig } from "../components/config/validate";

describe("the benchmark's generated stacks", () => {
  for (const size of [3, 30, 300]) {
    it(`are valid at ${size} nodes`, () => {
      const spec = validatePlatformConfig(
        generateStack(size) as Parameters<typeof validatePlatformConfig>[0],
        "Pulumi.bench.yaml",
      );
      assert.equal(spec.nodes.length, size);
    });
  }
});
