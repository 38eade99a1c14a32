import { addWalLine, emptyWindow } from '../benchmark/profileWal';

const line = (rmgr: string, total: number, desc: string): string =>
  `rmgr: ${rmgr.padEnd(10)} len (rec/tot):     54/${String(total).padStart(6)}, tx:        730, lsn: 0/01560D28, prev 0/01560CF0, desc: ${desc}`;

describe("the profile's reading of pg_waldump", () => {
  it('When records change pages of relations, then each counts to its relation, by kind, with its bytes and full-page images', () => {
    const window = emptyWindow();
    addWalLine(window, line('Heap', 222, 'INSERT off 3 flags 0x00, blkref #0: rel 1663/16384/16402 blk 0 FPW'));
    addWalLine(window, line('Heap', 80, 'INSERT+INIT off 1 flags 0x00, blkref #0: rel 1663/16384/16402 blk 1'));
    addWalLine(
      window,
      line(
        'Heap',
        70,
        'HOT_UPDATE off 2 xmax 730 flags 0x10 ; new off 5 xmax 0, blkref #0: rel 1663/16384/16402 blk 1',
      ),
    );
    const heap = window.relations.get(16402);
    expect(heap && [...heap.records]).toEqual([
      ['Heap INSERT', 1],
      ['Heap INSERT+INIT', 1],
      ['Heap HOT_UPDATE', 1],
    ]);
    expect(heap && [heap.bytes, heap.fullPageImages, heap.indexEntries]).toEqual([372, 1, 0]);
    expect(window.bytes).toBe(372);
  });

  it('When an index takes entries, then leaf and posting-list inserts and leaf splits count as entries, upper levels and dedups not', () => {
    const window = emptyWindow();
    const index = (desc: string): void =>
      addWalLine(window, line('Btree', 64, `${desc}, blkref #0: rel 1663/16384/16405 blk 1`));
    index('INSERT_LEAF off 2');
    index('INSERT_POST off 7');
    index('SPLIT_R level 0, firstrightoff 120, newitemoff 200, postingoff 0');
    index('SPLIT_L level 1, firstrightoff 12, newitemoff 4, postingoff 0');
    index('INSERT_UPPER off 3');
    index('DEDUP nintervals 4');
    expect(window.relations.get(16405)?.indexEntries).toBe(3);
  });

  it('When a record names no relation, or a line is not a record, then it counts apart, or not at all', () => {
    const window = emptyWindow();
    addWalLine(window, line('Transaction', 34, 'COMMIT 2026-12-02 16:31:10.123456 UTC'));
    addWalLine(window, 'pg_waldump: error: error in WAL record at 0/1560E48: invalid record length');
    expect([...window.other]).toEqual([['Transaction COMMIT', { count: 1, bytes: 34 }]]);
    expect(window.relations.size).toBe(0);
  });
});
