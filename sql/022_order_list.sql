-- The JSON API's list of orders (GET /orders, issue 55): newest change first, keyset-paged on (updated_at,
-- order_id), by POS or across them; a status is a filter on the rows the index gives. Each index is read backwards
-- from the page's start, so a page costs its rows whatever the history's length.
CREATE INDEX orders_by_change ON orders (updated_at, order_id);
CREATE INDEX orders_by_pos_and_change ON orders (merchant_pos_id, updated_at, order_id);
