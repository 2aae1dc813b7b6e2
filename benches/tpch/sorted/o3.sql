-- Line counts of the first ten orders, joined with their order dates.
SELECT o_orderkey, o_orderdate, count(*) AS lines
FROM orders JOIN lineitem ON o_orderkey = l_orderkey
GROUP BY o_orderkey, o_orderdate ORDER BY o_orderkey LIMIT 10;
