// What the sections' schemas (schema.ts) refused, worded: a required section left out, a value of the
// wrong shape, an unknown key answered with the key that was probably meant.
import { z } from "zod";
import { once, propertyNames } from "../problems";
import {
  clusterSchema,
  dnsSchema,
  fluxSchema,
  gcpSchema,
  nodeSchema,
  ociSchema,
  openbaoSchema,
  openstackSchema,
  proxmoxSchema,
} from "../schema";
import type { Rule } from "./rule";

/** Every key the sections know, for "did you mean" (computed when a stack has an unknown key). */
const knownKeys = once(() =>
  [
    clusterSchema,
    nodeSchema,
    proxmoxSchema,
    ociSchema,
    openstackSchema,
    gcpSchema,
    openbaoSchema,
    dnsSchema,
    fluxSchema,
  ].flatMap((schema) => [...propertyNames(z.toJSONSchema(schema, { unrepresentable: "any" }))]),
);

/** Each section and node the schema refused, in stack-file order. */
export const sectionSchemas: Rule = ({ schemaProblems }, problems) => {
  for (const problem of schemaProblems) {
    if (problem.kind === "missing") {
      problems.add([problem.key], "required", {
        hint: "See docs/configuration.md and Pulumi.staging.yaml",
      });
    } else {
      problems.addZodIssues(problem.key, problem.value, problem.issues, knownKeys());
    }
  }
};
