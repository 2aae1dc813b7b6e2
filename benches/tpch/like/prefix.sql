-- Rows whose comment starts with a word: one row group of lineitem's 49 in l_comment order.
SELECT l_returnflag, count(*) AS n, sum(l_extendedprice) AS s
FROM lineitem
WHERE l_comment LIKE 'fluffily%'
GROUP BY l_returnflag
ORDER BY l_returnflag
