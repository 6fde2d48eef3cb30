//! Stepping up scopes, and authorizations that outlive the request that started them.

use super::*;

#[tokio::test]
async fn a_403_for_an_older_token_is_retried_with_the_stepped_up_one() {
    let world = World::start(Config::default()).await;
    let hold = Hold::default();
    let oauth = client_through(&world, held_by(&hold));
    assert!(rejected(&oauth, 401, &world.challenge(Some("read"))).await);
    headers_for(&oauth, &world.server).await.unwrap();
    headers_for(&oauth, &world.server).await.unwrap();
    // One request's 403 starts a step-up; the user takes their time.
    hold.holding
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let opened = hold.opened.notified();
    let hook = oauth.clone();
    let insufficient = world.insufficient("write");
    let first = tokio::spawn(async move { hook.on_rejected(403, &insufficient).await });
    tokio::time::timeout(LIMIT, opened).await.unwrap();
    // Another request, sent with the same old token, is refused meanwhile.
    let stale = world.insufficient("write");
    let second = oauth.on_rejected(403, &stale);
    futures::pin_mut!(second);
    assert!(futures::poll!(&mut second).is_pending());
    hold.holding
        .store(false, std::sync::atomic::Ordering::SeqCst);
    hold.release.notify_one();
    assert!(tokio::time::timeout(LIMIT, first).await.unwrap().unwrap());
    // It is retried with the new token instead of failing: nothing new to ask for.
    assert!(tokio::time::timeout(LIMIT, second).await.unwrap());
    assert_eq!(world.authorizations().len(), 2);
    assert_sends(&oauth, &world.server, "Bearer at-3").await;
}

#[tokio::test]
async fn a_401_right_after_a_new_token_does_not_authorize_again() {
    let world = World::start(Config::default()).await;
    let oauth = authorized(&world).await;
    // The retry carries the new token and is refused again.
    headers_for(&oauth, &world.server).await.unwrap();
    assert!(!rejected(&oauth, 401, &world.challenge(None)).await);
    assert_eq!(world.authorizations().len(), 1);
    assert!(
        oauth
            .last_error()
            .unwrap()
            .message()
            .contains("just issued")
    );
}

#[tokio::test]
async fn authorization_outlives_the_request_that_started_it() {
    let world = World::start(Config::default()).await;
    // A user who takes their time: the browser says when it is open, and goes on only
    // when released.
    let hold = Hold::default();
    hold.holding
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let oauth = client_through(&world, held_by(&hold));
    let opened = hold.opened.notified();
    let hook = oauth.clone();
    let challenge = world.challenge(None);
    let request = tokio::spawn(async move { hook.on_rejected(401, &challenge).await });
    tokio::time::timeout(LIMIT, opened)
        .await
        .expect("the user was sent to authorize");
    // The request gives up (its timeout) while the user is still at it.
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());
    hold.holding
        .store(false, std::sync::atomic::Ordering::SeqCst);
    hold.release.notify_one();
    // The authorization completes all the same; the next request has the token.
    let tokens = tokio::time::timeout(LIMIT, oauth.tokens())
        .await
        .expect("the flow finished in time");
    assert_eq!(tokens.map(|t| t.access_token).as_deref(), Some("at-2"));
    assert_sends(&oauth, &world.server, "Bearer at-2").await;
}

#[tokio::test]
async fn tokens_never_go_to_another_origin() {
    let world = World::start(Config::default()).await;
    let oauth = authorized(&world).await;
    let other = format!("{}/mcp", world.issuer);
    assert!(headers_for(&oauth, &other).await.unwrap().is_empty());
    assert!(
        headers_for(&oauth, "http://localhost:1/mcp")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(authorization_to(&oauth, &world.server).await.is_some());
}
