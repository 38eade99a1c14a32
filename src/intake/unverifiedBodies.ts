/**
 * The bytes held at once for bodies whose signature is not checked yet: anyone who may connect can send
 * them, so they are bounded in total (UNVERIFIED_BODIES_LIMIT). A request reserves its body's size (the
 * declared Content-Length, or BODY_LIMIT for a chunked body) before a byte is read, and gives it back once
 * the signature has been checked; one that finds no room is answered 503 with Retry-After, unread.
 */
export class UnverifiedBodies {
  private held = 0;

  constructor(private readonly limitBytes: number) {}

  get heldBytes(): number {
    return this.held;
  }

  /** Room for `bytes`, and the function that gives it back (once); null when the budget cannot hold it now. */
  reserve(bytes: number): (() => void) | null {
    if (this.held + bytes > this.limitBytes) return null;
    this.held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
    };
  }
}
