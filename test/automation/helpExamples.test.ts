// The --help examples of upgrades run as printed against the stacks the repository ships: each
// version step is one the CLI itself allows from what that stack's file says.
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { DAY_TWO_EXAMPLES } from "../../automation/commands/dayTwo";
import {
  kubernetesStep,
  kubernetesSupported,
  talosStep,
  verdictMessage,
} from "../../automation/dayTwo/upgradePath";
import { ROOT } from "./helpers";

/** The shipped foundation stack's cluster versions. */
function clusterOf(env: string): { talosVersion: string; kubernetesVersion: string } {
  const file = path.join(ROOT, `Pulumi.${env}.yaml`);
  const stack = parse(fs.readFileSync(file, "utf8")) as {
    config: Record<string, { talosVersion: string; kubernetesVersion: string }>;
  };
  return stack.config["talos-platform:cluster"];
}

describe("the --help examples of upgrades", () => {
  const upgrades = DAY_TWO_EXAMPLES.map((example) =>
    /^upgrade (talos|kubernetes) (\S+) --to (\S+)/.exec(example),
  ).filter((match): match is RegExpExecArray => match !== null);

  it("has examples of both upgrades", () => {
    assert.deepEqual([...new Set(upgrades.map((match) => match[1]))].sort(), [
      "kubernetes",
      "talos",
    ]);
  });

  for (const [example, what, env, to] of upgrades) {
    it(`\`${example}\` is a step the shipped Pulumi.${env}.yaml allows`, () => {
      const cluster = clusterOf(env);
      if (what === "talos") {
        const step = talosStep(cluster.talosVersion, to, env);
        assert.ok(step.ok, verdictMessage(step));
        const supported = kubernetesSupported(to, [cluster.kubernetesVersion]);
        assert.ok(supported.ok, verdictMessage(supported));
      } else {
        const step = kubernetesStep(cluster.kubernetesVersion, to);
        assert.ok(step.ok && step.change !== "none", verdictMessage(step));
        const supported = kubernetesSupported(cluster.talosVersion, [
          cluster.kubernetesVersion,
          to,
        ]);
        assert.ok(supported.ok, verdictMessage(supported));
      }
    });
  }
});
