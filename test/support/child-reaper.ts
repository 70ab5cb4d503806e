// Whatever happens to a test (a failure, the runner's timeout, Ctrl-C), no process it started outlives
// it: each child started through `reapedOnExit` is SIGKILLed when the test process exits or is
// signalled, and forgotten once it exits by itself.
import type { ChildProcess } from 'node:child_process';

const liveChildren = new Set<ChildProcess>();

function killChildren(): void {
  for (const child of liveChildren) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

process.once('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killChildren();
    process.kill(process.pid, signal); // the default action, now that this listener is gone
  });
}

export function reapedOnExit<C extends ChildProcess>(child: C): C {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  return child;
}
