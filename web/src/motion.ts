// Animation timing: respects prefers-reduced-motion and the speed control.

const query =
  typeof matchMedia === "function" ? matchMedia("(prefers-reduced-motion: reduce)") : null;
let speed = 1;

export function setSpeed(s: number): void {
  speed = s;
}

export function reducedMotion(): boolean {
  return query?.matches ?? false;
}

/** A duration in ms scaled by the speed; 0 with reduced motion. */
export function dur(ms: number): number {
  return reducedMotion() ? 0 : ms / speed;
}
