// components/config/rules/keys.ts: unknown keys at the top of the foundation's namespace.
import { itRefuses, RuleCase, withServices } from "../../fixtures";
import { itRefusesMutations } from "../arbitraryStack";

const cases: RuleCase[] = [
  {
    rule: "a misspelt top-level key",
    base: withServices,
    broken: (v) => (v.dsn = "example-net"),
    problems: ["talos-platform:dsn: unknown key. Did you mean talos-platform:dns?"],
    secrets: ["fluxDeployKey"],
  },
];

describe("rules: keys", () => {
  itRefuses(cases);

  itRefusesMutations({
    "an unknown top-level key": (v) => {
      v.presentKeys.add("nodez");
      return "talos-platform:nodez";
    },
  });
});
