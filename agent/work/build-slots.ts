/** What a build needs of the runner: one container of the node's cap while it runs. */
export interface ContainerCap {
  holdForBuild(): Promise<() => void>;
}

/**
 * The node's own accounting of builds: at most `max` at once (each a CPU- and disk-hungry
 * container), and each holding one container of the runner's cap, so builds and warm function
 * containers together stay under --max-containers. The dispatcher is told `max` and does not send
 * more; with several dispatch shards it counts per shard, and a surplus build waits here.
 */
export class BuildSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly max: number,
    private readonly containers: ContainerCap,
  ) {}

  /** Waits for a build slot and a container; call the returned release once, when the build ends. */
  async take(): Promise<() => void> {
    while (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running += 1;
    let releaseContainer: () => void;
    try {
      releaseContainer = await this.containers.holdForBuild();
    } catch (err) {
      this.free();
      throw err;
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      releaseContainer();
      this.free();
    };
  }

  get busy(): number {
    return this.running;
  }

  private free() {
    this.running -= 1;
    this.waiting.shift()?.();
  }
}
