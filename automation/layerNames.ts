// The layers' names, apart from layers.ts (which reads YAML): the command line needs them for its
// options and help, and must load nothing heavy to print them.

/** Layers in the order they are brought up (destroy goes the other way). */
export const LAYER_NAMES = ["bootstrap", "foundation", "app"] as const;

/** A layer's name. */
export type LayerName = (typeof LAYER_NAMES)[number];

/** What `--layer` accepts: one layer, or every layer that exists. */
export const LAYER_CHOICES = [...LAYER_NAMES, "all"] as const;

/** The layer commands use when `--layer` is not given. */
export const DEFAULT_LAYER: LayerName = "foundation";
