// The CA rotation records `rotate-ca` writes (cluster.caRotation): a node a rolling phase lists must
// be one of the stack's, or its config would silently render one phase behind.
import type { Rule } from "./rule";

/** Every node a rotation record lists exists in the stack file. */
export const caRotationNodes: Rule = (input, problems) => {
  const rotation = input.cluster?.caRotation;
  if (!rotation) return;
  const names = new Set(input.nodes.map((n) => n.node.name));
  for (const ca of ["talos", "kubernetes"] as const) {
    (rotation[ca]?.nodes ?? []).forEach((name, i) => {
      if (names.has(name)) return;
      problems.add(["cluster", "caRotation", ca, "nodes", i], "is not a node of the stack file", {
        got: name,
        hint: `rotate-ca wrote the nodes it reached; rerun \`npm run platform -- rotate-ca <env> --${ca}\` after restoring the node, or restore the record from Git`,
      });
    });
  }
};
