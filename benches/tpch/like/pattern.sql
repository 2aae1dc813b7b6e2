-- A pattern with more after its literal start ('fluffily'), and a second LIKE.
SELECT count(*) AS n, sum(l_quantity) AS q
FROM lineitem
WHERE l_comment LIKE 'fluffily%express%' AND l_shipmode LIKE 'A%'
