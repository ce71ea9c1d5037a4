// Entry point of the foundation project (`pulumi up` in this folder, or the Automation API CLI).
// Exporting a function lets Pulumi await it and use its result as the stack outputs.
import { foundation } from "./components/foundation";

export = async () => foundation();
