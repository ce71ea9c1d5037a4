// Entry point of the bootstrap project (`npm run platform -- up shared --layer bootstrap`).
import { bootstrapLayer } from "../components/bootstrap";

export = async () => bootstrapLayer();
