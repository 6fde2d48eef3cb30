//! The public benchmark's I/O-bound workload, reproduced: three shop tools that read and
//! write a real `redis-server` and call a small HTTP API, the data both are seeded with,
//! and that API (`bench-shop-api`).
//!
//! The workload is the one of the public cross-language MCP server benchmark (tmdevlab,
//! "MCP Server Performance Benchmark v2"), written here from its description: the same
//! tools, keys, seed data, API endpoints and call pattern. Both SDKs' servers run the
//! tool code of this module unchanged ([`Shop::call`]), with the same Redis client (a
//! pool of multiplexed `redis` connections) and the same HTTP client (`reqwest`, one
//! keep-alive pool); only the MCP layer around it differs.
//!
//! ```
//! let api = modelctx_bench::shop::Catalog::new();
//! let found = api.search("Electronics", 50.0, 500.0, 10);
//! assert_eq!(found["total_found"], 2251);
//! assert_eq!(found["products"].as_array().map(Vec::len), Some(10));
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis::aio::MultiplexedConnection;
use serde_json::{Map, Value, json};

/// The three tools, as `(name, description, input schema)`: what both SDKs' servers list.
pub fn tools() -> [(&'static str, &'static str, Map<String, Value>); 3] {
    let object = |v: Value| v.as_object().cloned().unwrap_or_default();
    [
        (
            "search_products",
            "Search products by category and price range, merged with popularity data",
            object(json!({
                "type": "object",
                "properties": {
                    "category": {"type": "string"},
                    "min_price": {"type": "number"},
                    "max_price": {"type": "number"},
                    "limit": {"type": "integer", "minimum": 1}
                }
            })),
        ),
        (
            "get_user_cart",
            "Get user cart details with recent order history",
            object(json!({
                "type": "object",
                "properties": {"user_id": {"type": "string"}}
            })),
        ),
        (
            "checkout",
            "Process checkout: calculate total, update rate limit, record history",
            object(json!({
                "type": "object",
                "properties": {
                    "user_id": {"type": "string"},
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "product_id": {"type": "integer"},
                                "quantity": {"type": "integer"}
                            },
                            "required": ["product_id", "quantity"]
                        }
                    }
                }
            })),
        ),
    ]
}

/// The user a load worker (counted from 1) acts as: `user-00001`, `user-00002`, ...
pub fn user(worker: usize) -> String {
    format!("user-{:05}", worker % 1000)
}

/// The arguments the load generator calls `tool` with, for `user`.
pub fn arguments(tool: &str, user: &str) -> Value {
    match tool {
        "search_products" => {
            json!({"category": "Electronics", "min_price": 50, "max_price": 500, "limit": 10})
        }
        "get_user_cart" => json!({"user_id": user}),
        _ => json!({
            "user_id": user,
            "items": [{"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]
        }),
    }
}

/// Checks a tool's answer (the JSON of its one text block) as the public benchmark does.
pub fn check(tool: &str, answer: &Value) -> Result<(), String> {
    let len = |key: &str| answer[key].as_array().map_or(0, Vec::len);
    let ok = match tool {
        "search_products" => {
            answer["total_found"] == 2251 && len("products") == 10 && len("top10_popular_ids") == 10
        }
        "get_user_cart" => {
            answer["cart"]["item_count"].as_u64().unwrap_or(0) >= 1 && len("recent_history") == 5
        }
        // The order id and total come from the API, the rate-limit count from Redis: an
        // answer missing either did not reach both.
        _ => {
            answer["order_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("ORD-"))
                && answer["total"].as_f64().unwrap_or(0.0) > 0.0
                && answer["items_count"] == 2
                && answer["rate_limit_count"].as_u64().unwrap_or(0) >= 1
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{tool} answered {answer}"))
    }
}

// ---- the tools -------------------------------------------------------------------------

/// Connections to Redis the tools share (the public benchmark pools them too).
const REDIS_CONNECTIONS: usize = 8;

/// What the tools use: a pool of Redis connections and an HTTP client for the API.
#[derive(Debug)]
pub struct Shop {
    redis: Vec<MultiplexedConnection>,
    next: AtomicUsize,
    http: reqwest::Client,
    api: String,
}

impl Shop {
    /// Connects to the Redis at `redis_url`; the API answers at `api` (`http://ADDR`).
    pub async fn connect(redis_url: &str, api: &str) -> Result<Arc<Self>, String> {
        let client = redis::Client::open(redis_url).map_err(|e| format!("{redis_url}: {e}"))?;
        let mut redis = Vec::with_capacity(REDIS_CONNECTIONS);
        for _ in 0..REDIS_CONNECTIONS {
            redis.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| format!("cannot connect to {redis_url}: {e}"))?,
            );
        }
        // The API is on loopback: never through a proxy the environment names.
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(50)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            redis,
            next: AtomicUsize::new(0),
            http,
            api: api.trim_end_matches('/').to_owned(),
        }))
    }

    fn redis(&self) -> MultiplexedConnection {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.redis.len();
        self.redis[i].clone()
    }

    async fn get(&self, path: &str) -> Result<Value, String> {
        let response = self
            .http
            .get(format!("{}{path}", self.api))
            .send()
            .await
            .map_err(|e| format!("API: {e}"))?;
        read_json(response).await
    }

    /// Runs tool `name` with `args`; the answer is the JSON its one text block carries.
    pub async fn call(&self, name: &str, args: &Map<String, Value>) -> Result<Value, String> {
        match name {
            "search_products" => self.search_products(args).await,
            "get_user_cart" => self.get_user_cart(args).await,
            "checkout" => self.checkout(args).await,
            other => Err(format!("unknown tool {other:?}")),
        }
    }

    /// The ten most popular products (Redis) beside the API's search, merged.
    async fn search_products(&self, args: &Map<String, Value>) -> Result<Value, String> {
        let category = args
            .get("category")
            .and_then(Value::as_str)
            .unwrap_or("Electronics");
        let min = args
            .get("min_price")
            .and_then(Value::as_f64)
            .unwrap_or(50.0);
        let max = args
            .get("max_price")
            .and_then(Value::as_f64)
            .unwrap_or(500.0);
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(10);
        let mut redis = self.redis();
        let popular = async {
            redis::cmd("ZREVRANGE")
                .arg("bench:popular")
                .arg(0)
                .arg(9)
                .query_async::<Vec<String>>(&mut redis)
                .await
                .map_err(|e| format!("Redis: {e}"))
        };
        let path = format!(
            "/products/search?category={category}&min_price={min}&max_price={max}&limit={limit}"
        );
        let (popular, found) = tokio::join!(popular, self.get(&path));
        let top: Vec<u64> = popular?
            .iter()
            .filter_map(|m| m.strip_prefix("product:")?.parse().ok())
            .collect();
        let found = found?;
        let products: Vec<Value> = found["products"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let rank = p["id"]
                    .as_u64()
                    .and_then(|id| top.iter().position(|&t| t == id))
                    .map_or(0, |at| at + 1);
                json!({
                    "id": p["id"], "sku": p["sku"], "name": p["name"],
                    "price": p["price"], "rating": p["rating"], "popularity_rank": rank
                })
            })
            .collect();
        Ok(json!({
            "category": category,
            "total_found": found["total_found"],
            "products": products,
            "top10_popular_ids": top,
        }))
    }

    /// The user's cart (Redis), then their last five orders (Redis) beside the cart's
    /// first product (the API).
    async fn get_user_cart(&self, args: &Map<String, Value>) -> Result<Value, String> {
        let user = user_of(args);
        let mut redis = self.redis();
        let cart: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(format!("bench:cart:{user}"))
            .query_async(&mut redis)
            .await
            .map_err(|e| format!("Redis: {e}"))?;
        let items: Value = cart
            .get("items")
            .and_then(|i| serde_json::from_str(i).ok())
            .unwrap_or_else(|| json!([]));
        let first = items[0]["product_id"].as_u64().unwrap_or(1);
        let total: f64 = cart
            .get("total")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0.0);
        let history = async {
            redis::cmd("LRANGE")
                .arg(format!("bench:history:{user}"))
                .arg(0)
                .arg(4)
                .query_async::<Vec<String>>(&mut redis)
                .await
                .map_err(|e| format!("Redis: {e}"))
        };
        let path = format!("/products/{first}");
        let (history, product) = tokio::join!(history, self.get(&path));
        product?;
        let history: Vec<Value> = history?
            .iter()
            .filter_map(|h| serde_json::from_str(h).ok())
            .collect();
        let count = items.as_array().map_or(0, Vec::len);
        Ok(json!({
            "user_id": user,
            "cart": {"items": items, "item_count": count, "estimated_total": total},
            "recent_history": history,
        }))
    }

    /// The order's total (the API) beside one Redis pipeline: the user's rate-limit
    /// counter, the order appended to their history, the first product's popularity.
    async fn checkout(&self, args: &Map<String, Value>) -> Result<Value, String> {
        let user = user_of(args);
        let items = args.get("items").cloned().unwrap_or_else(
            || json!([{"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]),
        );
        let first = items[0]["product_id"].as_u64().unwrap_or(1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let bucket = user
            .rsplit('-')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
            % 100;
        let order = json!({"order_id": format!("ORD-{user}-{now}"), "items": items, "ts": now});
        let mut redis = self.redis();
        let record = async {
            redis::pipe()
                .cmd("INCR")
                .arg(format!("bench:ratelimit:user-{bucket:05}"))
                .cmd("RPUSH")
                .arg(format!("bench:history:{user}"))
                .arg(order.to_string())
                .ignore()
                .cmd("ZADD")
                .arg("bench:popular")
                .arg("INCR")
                .arg(1)
                .arg(format!("product:{first}"))
                .ignore()
                .query_async::<(u64,)>(&mut redis)
                .await
                .map_err(|e| format!("Redis: {e}"))
        };
        let calculate = async {
            let response = self
                .http
                .post(format!("{}/cart/calculate", self.api))
                .header("content-type", "application/json")
                .body(json!({"user_id": user, "items": items}).to_string())
                .send()
                .await
                .map_err(|e| format!("API: {e}"))?;
            read_json(response).await
        };
        let (recorded, total) = tokio::join!(record, calculate);
        let (count,) = recorded?;
        let total = total?;
        Ok(json!({
            "order_id": total["order_id"],
            "user_id": user,
            "total": total["total"],
            "items_count": total["items_count"],
            "rate_limit_count": count,
            "status": "confirmed",
        }))
    }
}

fn user_of(args: &Map<String, Value>) -> &str {
    args.get("user_id")
        .and_then(Value::as_str)
        .unwrap_or("user-00042")
}

async fn read_json(response: reqwest::Response) -> Result<Value, String> {
    let status = response.status();
    let body = response.bytes().await.map_err(|e| format!("API: {e}"))?;
    if !status.is_success() {
        return Err(format!("API answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("API: {e}"))
}

// ---- the data --------------------------------------------------------------------------

/// Products in the catalog (and members of the popularity set).
pub const PRODUCTS: u64 = 100_000;

/// Seeds the Redis at `url` as the public benchmark does: 10,000 carts, the last 20
/// orders of 1,000 users, the popularity of every product, 100 rate-limit counters.
pub async fn seed(url: &str) -> Result<(), String> {
    let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
    let mut redis = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let price = |pid: u64| ((pid * 100) % 9999 + 1) as f64 / 100.0;
    let mut pipe = redis::pipe();
    let mut queued = 0;
    let mut commands: Vec<redis::Cmd> = Vec::new();
    commands.push(redis::cmd("FLUSHDB"));
    for n in 1..=10_000u64 {
        let mut items = vec![
            json!({"product_id": (n * 7) % PRODUCTS + 1, "qty": 1 + n % 3}),
            json!({"product_id": (n * 13) % PRODUCTS + 1, "qty": 1 + n % 2}),
        ];
        if n % 3 == 0 {
            items.push(json!({"product_id": (n * 17) % PRODUCTS + 1, "qty": 1}));
        }
        let total: f64 = items
            .iter()
            .map(|i| {
                i["qty"].as_u64().unwrap_or(0) as f64 * price(i["product_id"].as_u64().unwrap_or(0))
            })
            .sum();
        let mut cmd = redis::cmd("HSET");
        cmd.arg(format!("bench:cart:user-{n:05}"))
            .arg("user_id")
            .arg(format!("user-{n:05}"))
            .arg("items")
            .arg(Value::from(items).to_string())
            .arg("created")
            .arg("1740000000")
            .arg("expires")
            .arg("1740086400")
            .arg("total")
            .arg(format!("{total:.2}"));
        commands.push(cmd);
    }
    for n in 1..=1_000u64 {
        let mut cmd = redis::cmd("RPUSH");
        cmd.arg(format!("bench:history:user-{n:05}"));
        for j in 1..=20u64 {
            let price = round2(((n * j * 13) % 9999 + 1) as f64 / 100.0);
            cmd.arg(
                json!({
                    "order_id": format!("ORD-{n:05}-{j:02}"),
                    "product_id": (n * j * 7) % PRODUCTS + 1,
                    "qty": 1 + j % 3,
                    "price": price,
                    "ts": 1_740_000_000 + n * 86_400 + j * 3_600,
                })
                .to_string(),
            );
        }
        commands.push(cmd);
    }
    for chunk in (1..=PRODUCTS).collect::<Vec<_>>().chunks(1_000) {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg("bench:popular");
        for &i in chunk {
            cmd.arg(i * 7 % 10_000).arg(format!("product:{i}"));
        }
        commands.push(cmd);
    }
    for n in 1..=100u64 {
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("bench:ratelimit:user-{n:05}")).arg(0);
        commands.push(cmd);
    }
    for cmd in commands {
        pipe.add_command(cmd).ignore();
        queued += 1;
        if queued == 500 {
            pipe.query_async::<()>(&mut redis)
                .await
                .map_err(|e| format!("seeding Redis: {e}"))?;
            pipe = redis::pipe();
            queued = 0;
        }
    }
    pipe.query_async::<()>(&mut redis)
        .await
        .map_err(|e| format!("seeding Redis: {e}"))
}

const CATEGORIES: [&str; 20] = [
    "Electronics",
    "Books",
    "Clothing",
    "Sports",
    "Home",
    "Garden",
    "Toys",
    "Food",
    "Beauty",
    "Automotive",
    "Music",
    "Movies",
    "Games",
    "Office",
    "Health",
    "Pets",
    "Travel",
    "Tools",
    "Jewelry",
    "Baby",
];

const TAGS: [&str; 8] = [
    "sale",
    "new",
    "featured",
    "bestseller",
    "clearance",
    "limited",
    "popular",
    "exclusive",
];

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The API's catalog: 100,000 products in memory, each category's sorted by price.
#[derive(Debug)]
pub struct Catalog {
    products: Vec<Value>,
    prices: Vec<f64>,
    /// Per category (index in `CATEGORIES`), its products' indexes by rising price.
    by_category: Vec<Vec<usize>>,
}

impl Default for Catalog {
    fn default() -> Self {
        Self::new()
    }
}

impl Catalog {
    /// Builds the catalog: product `i + 1` is in category `i % 20`, of brand `i % 50`,
    /// priced `1 + (i % 99900) / 100`.
    pub fn new() -> Self {
        let mut products = Vec::with_capacity(PRODUCTS as usize);
        let mut prices = Vec::with_capacity(PRODUCTS as usize);
        let mut by_category = vec![Vec::new(); CATEGORIES.len()];
        for i in 0..PRODUCTS as usize {
            let id = i + 1;
            let category = CATEGORIES[i % CATEGORIES.len()];
            let brand = format!("Brand{:02}", i % 50);
            let price = 1.0 + (i % 99_900) as f64 / 100.0;
            let tags: Vec<&str> = (0..2 + i % 3).map(|j| TAGS[(i + j) % TAGS.len()]).collect();
            products.push(json!({
                "id": id,
                "sku": format!("SKU-{id:06}"),
                "name": format!("{brand} {category} Item {id}"),
                "category": category,
                "brand": brand,
                "price": price,
                "stock": i % 501,
                "rating": 1.0 + (i % 40) as f64 / 10.0,
                "tags": tags,
                "weight": round2((1 + i % 100) as f64 * 0.1),
                "description": format!("Quality {category} by {brand}. SKU {id:06}."),
            }));
            prices.push(price);
            by_category[i % CATEGORIES.len()].push(i);
        }
        for list in &mut by_category {
            list.sort_by(|&a, &b| prices[a].total_cmp(&prices[b]));
        }
        Self {
            products,
            prices,
            by_category,
        }
    }

    /// `GET /products/search`: the category's products priced from `min` to `max`
    /// (no upper bound when `max` is 0), cheapest first, at most `limit` (10 when
    /// `limit` is 0 or over 1,000), with how many matched.
    pub fn search(&self, category: &str, min: f64, max: f64, limit: usize) -> Value {
        let limit = if limit == 0 || limit > 1_000 {
            10
        } else {
            limit
        };
        let list = CATEGORIES
            .iter()
            .position(|c| *c == category)
            .map_or(&[][..], |c| &self.by_category[c][..]);
        let from = list.partition_point(|&i| self.prices[i] < min);
        let to = if max > 0.0 {
            list.partition_point(|&i| self.prices[i] <= max)
        } else {
            list.len()
        };
        let matched = &list[from..to.max(from)];
        let products: Vec<&Value> = matched
            .iter()
            .take(limit)
            .map(|&i| &self.products[i])
            .collect();
        json!({"category": category, "total_found": matched.len(), "products": products})
    }

    /// `GET /products/{id}`.
    pub fn product(&self, id: u64) -> Option<&Value> {
        let index = usize::try_from(id.checked_sub(1)?).ok()?;
        self.products.get(index)
    }

    /// `POST /cart/calculate`: the order's subtotal, 8.5 % tax, shipping (5.99, free
    /// with a 10 % discount from 100), total and an order id.
    pub fn calculate(&self, order: &Value) -> Value {
        let user = order["user_id"].as_str().unwrap_or_default();
        let items = order["items"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let subtotal = round2(
            items
                .iter()
                .filter_map(|item| {
                    let id = item["product_id"].as_u64()?;
                    let index = usize::try_from(id.checked_sub(1)?).ok()?;
                    let price = self.prices.get(index)?;
                    Some(price * item["quantity"].as_u64().unwrap_or(0) as f64)
                })
                .sum(),
        );
        let tax = round2(subtotal * 0.085);
        let (shipping, discount) = if subtotal >= 100.0 {
            (0.0, round2(subtotal * 0.1))
        } else {
            (5.99, 0.0)
        };
        json!({
            "order_id": format!("ORD-{}-{}", user.replace('-', ""), items.len()),
            "user_id": user,
            "subtotal": subtotal,
            "tax": tax,
            "shipping": shipping,
            "discount": discount,
            "total": round2(subtotal + tax + shipping - discount),
            "items_count": items.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_answers_as_the_workload_expects() {
        let api = Catalog::new();
        let found = api.search("Electronics", 50.0, 500.0, 10);
        assert_eq!(found["total_found"], 2251);
        let prices: Vec<f64> = found["products"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["price"].as_f64().unwrap())
            .collect();
        assert!(prices.windows(2).all(|w| w[0] <= w[1]) && prices[0] >= 50.0);
        assert_eq!(api.product(42).unwrap()["sku"], "SKU-000042");
        assert!(api.product(0).is_none() && api.product(PRODUCTS + 1).is_none());
        let order = api.calculate(&arguments("checkout", "user-00007"));
        assert_eq!(order["items_count"], 2);
        assert_eq!(order["order_id"], "ORD-user00007-2");
        assert!(order["total"].as_f64().unwrap() > 0.0);
    }
}
