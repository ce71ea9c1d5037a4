// The shape of a cross-field check over the parsed stack config.
export type { Rule } from "../rules";
